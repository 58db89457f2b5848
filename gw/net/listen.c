#include "net/listen.h"

#include "core/fd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int gw_listen_open(const gw_listen_t *l)
{
    int fd = socket(l->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0)
        goto fail;
    if (l->reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0)
        goto fail;
    if (l->addr.ss_family == AF_INET6 &&
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0)
        goto fail;
    /* accepted sockets inherit TCP_NODELAY from the listener (Linux copies the listener's
     * socket): one setsockopt() here instead of one per connection (#11) */
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0)
        goto fail;
    if (bind(fd, (const struct sockaddr *)&l->addr, l->addrlen) != 0)
        goto fail;
    if (listen(fd, l->backlog > 0 ? l->backlog : 511) != 0)
        goto fail;
    return fd;
fail:
    return gw_fd_fail(fd);
}

void gw_addr_text(const struct sockaddr *sa, char *out, size_t cap)
{
    /* inet_ntop writes nothing when the text does not fit (ENOSPC): format in full here,
     * then truncate into out */
    char text[INET6_ADDRSTRLEN] = "unix:";
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, text, sizeof(text));
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, text, sizeof(text));
    if (cap)
        snprintf(out, cap, "%s", text);
}
