/*
 * File-descriptor helpers, libc only: shared by the gateway and its bench tools
 * (bench/replay.c).
 */
#ifndef GW_CORE_FD_H
#define GW_CORE_FD_H

#include <errno.h>
#include <unistd.h>

/**
 * The failure path of a function that returns an fd it opened, or -1 with errno: closes
 * fd (open; closed whatever close() says) and returns -1 with errno as the failed call
 * left it, which close() may otherwise change.
 */
static inline int gw_fd_fail(int fd)
{
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

#endif
