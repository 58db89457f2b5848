#include "net/post.h"

static gw_posted_t *post_head, *post_tail;
static size_t n_posted;

void gw_post(gw_posted_t *p)
{
    if (p->queued)
        return;
    p->queued = 1;
    n_posted++;
    p->next = NULL;
    p->prev = post_tail;
    if (post_tail)
        post_tail->next = p;
    else
        post_head = p;
    post_tail = p;
}

void gw_unpost(gw_posted_t *p)
{
    if (!p->queued)
        return;
    if (p->prev)
        p->prev->next = p->next;
    else
        post_head = p->next;
    if (p->next)
        p->next->prev = p->prev;
    else
        post_tail = p->prev;
    p->queued = 0;
    n_posted--;
    p->next = p->prev = NULL;
}

int gw_post_pending(void)
{
    return post_head != NULL;
}

size_t gw_post_run(void)
{
    size_t n = n_posted, ran = 0;
    while (n-- && post_head) {
        gw_posted_t *p = post_head;
        gw_unpost(p);
        p->run(p);
        ran++;
    }
    return ran;
}
