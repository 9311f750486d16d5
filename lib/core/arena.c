#include <errno.h>
#include <sys/mman.h>

#include "arena.h"

#define REGION_STEP (2u << 20)
/* below this a region stays on small pages: a huge page would put 2 MiB in RSS for a few bytes */
#define REGION_HUGE ((size_t)16 << 20)

int region_init(struct region *r, size_t max_bytes)
{
	max_bytes = (max_bytes + REGION_STEP - 1) & ~(size_t)(REGION_STEP - 1);
	void *p = mmap(NULL, max_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	r->base = p;
	r->reserved = max_bytes;
	r->committed = 0;
	return 0;
}

int region_ensure(struct region *r, size_t bytes)
{
	if (bytes <= r->committed)
		return 0;
	if (bytes > r->reserved) {
		errno = ENOMEM;
		return -1;
	}
	size_t want = (bytes + REGION_STEP - 1) & ~(size_t)(REGION_STEP - 1);
	/* grow by at least an eighth so a large region is not re-protected per step */
	size_t step = r->committed / 8;
	if (want < r->committed + step)
		want = r->committed + step;
	want = (want + REGION_STEP - 1) & ~(size_t)(REGION_STEP - 1);
	if (want > r->reserved)
		want = r->reserved;
	if (mprotect(r->base + r->committed, want - r->committed, PROT_READ | PROT_WRITE) < 0)
		return -1;
	if (want >= REGION_HUGE)
		madvise(r->base + r->committed, want - r->committed, MADV_HUGEPAGE);
	r->committed = want;
	return 0;
}

void region_free(struct region *r)
{
	if (r->base)
		munmap(r->base, r->reserved);
	r->base = NULL;
	r->reserved = r->committed = 0;
}

void *bigtable_alloc(size_t bytes, enum bigtable_pages pages)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (bytes >= REGION_STEP)
		madvise(p, bytes, pages == BIGTABLE_HUGE_PAGES ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	return p;
}

void bigtable_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes);
}
