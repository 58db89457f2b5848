/*
 * Intrusive doubly linked lists: a node is any struct with `next` and `prev` pointers to
 * its own type, a list is a pointer to its first node (NULL: empty). Used for the worker's
 * connections, an HTTP/2 connection's streams and an upstream's idle connections.
 */
#ifndef GW_CORE_LIST_H
#define GW_CORE_LIST_H

#include <stddef.h>

/** Put node first in the list whose first node is head (an lvalue). */
#define GW_LIST_PUSH(head, node)                                                                   \
    do {                                                                                           \
        (node)->prev = NULL;                                                                       \
        (node)->next = (head);                                                                     \
        if (head)                                                                                  \
            (head)->prev = (node);                                                                 \
        (head) = (node);                                                                           \
    } while (0)

/** Take node out of the list whose first node is head (an lvalue); node's own links are
 * cleared. */
#define GW_LIST_UNLINK(head, node)                                                                 \
    do {                                                                                           \
        if ((node)->prev)                                                                          \
            (node)->prev->next = (node)->next;                                                     \
        else                                                                                       \
            (head) = (node)->next;                                                                 \
        if ((node)->next)                                                                          \
            (node)->next->prev = (node)->prev;                                                     \
        (node)->next = (node)->prev = NULL;                                                        \
    } while (0)

#endif
