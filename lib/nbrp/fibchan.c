#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "fibchan.h"
#include "nameset.h"
#include "pbframe.h"

/* ---- frames --------------------------------------------------------- */

void fibchan_reader_init(struct fibchan_reader *r)
{
	frame_reader_init(&r->frames, FIBCHAN_MAX_FRAME);
}

void fibchan_reader_free(struct fibchan_reader *r)
{
	frame_reader_free(&r->frames);
}

int fibchan_reader_feed(struct fibchan_reader *r, const uint8_t *data, size_t len)
{
	return frame_reader_feed(&r->frames, data, len);
}

static int fail(char *err, size_t err_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, err_len, fmt, ap);
	va_end(ap);
	return -1;
}

int fibchan_reader_next(struct fibchan_reader *r, Crfib__FibMessage **msg, char *err, size_t err_len)
{
	const uint8_t *frame;
	size_t flen;
	int rc = frame_reader_next(&r->frames, &frame, &flen);
	if (rc == 0)
		return 0;
	if (rc < 0 && flen == 0)
		return fail(err, err_len, "empty frame");
	if (rc < 0)
		return fail(err, err_len, "frame of %zu bytes is over the limit of %u", flen, FIBCHAN_MAX_FRAME);
	Crfib__FibMessage *m = crfib__fib_message__unpack(NULL, flen, frame);
	if (!m)
		return fail(err, err_len, "frame of %zu bytes is not a FibMessage", flen);
	if (m->body_case == CRFIB__FIB_MESSAGE__BODY__NOT_SET) {
		crfib__fib_message__free_unpacked(m, NULL);
		return fail(err, err_len, "message without a body");
	}
	*msg = m;
	return 1;
}

void fibchan_message_free(Crfib__FibMessage *msg)
{
	if (msg)
		crfib__fib_message__free_unpacked(msg, NULL);
}

uint8_t *fibchan_encode(const Crfib__FibMessage *msg, size_t *len)
{
	return pbframe_pack(&msg->base, FIBCHAN_MAX_FRAME, len);
}

/* ---- checking an update --------------------------------------------- */

static int name_of(const ProtobufCBinaryData *b, struct name *out, const char *what, size_t index,
		   char *err, size_t err_len)
{
	if (b->len == 0)
		return fail(err, err_len, "%s[%zu]: empty name", what, index);
	int rc = name_from_wire(out, b->data, b->len);
	if (rc != NAME_OK)
		return fail(err, err_len, "%s[%zu]: bad name: %s", what, index, name_strerror(rc));
	return 0;
}

static int routes_of(Crfib__Route *const *in, size_t n, struct route *out, const char *what, size_t index,
		     char *err, size_t err_len)
{
	if (n > ROUTESET_MAX_ROUTES)
		return fail(err, err_len, "%s[%zu]: %zu routes, at most %d", what, index, n, ROUTESET_MAX_ROUTES);
	for (size_t i = 0; i < n; i++) {
		const Crfib__Route *r = in[i];
		struct route *o = &out[i];
		memset(o, 0, sizeof(*o));
		switch (r->kind) {
		case CRFIB__ROUTE__KIND__SERVER: o->kind = ROUTE_SERVER; break;
		case CRFIB__ROUTE__KIND__ROUTER: o->kind = ROUTE_ROUTER; break;
		default:
			return fail(err, err_len, "%s[%zu].routes[%zu]: unknown kind %d", what, index, i, (int)r->kind);
		}
		if (r->addr.len == 4)
			o->family = AF_INET;
		else if (r->addr.len == 16)
			o->family = AF_INET6;
		else
			return fail(err, err_len, "%s[%zu].routes[%zu]: address of %zu bytes, not 4 or 16",
				    what, index, i, r->addr.len);
		memcpy(o->addr, r->addr.data, r->addr.len);
		if (r->port > 65535 || (o->kind == ROUTE_ROUTER && r->port == 0))
			return fail(err, err_len, "%s[%zu].routes[%zu]: bad port %u", what, index, i, r->port);
		o->port = (uint16_t)r->port;
		o->load_ms = r->load_ms;
		o->origin = r->origin;
	}
	return 0;
}

static bool in_list(const ProtobufCBinaryData *list, size_t n, const struct name *nm)
{
	struct name other;
	for (size_t i = 0; i < n; i++)
		if (name_from_wire(&other, list[i].data, list[i].len) == NAME_OK && name_equal(&other, nm))
			return true;
	return false;
}

/* An aggregate a membership refers to must exist once the update's aggregates are applied. */
static bool aggregate_will_exist(struct fib *fib, const Crfib__Update *u, const struct name *nm)
{
	struct name other;
	uint32_t id;
	for (size_t i = 0; i < u->n_aggregates; i++)
		if (name_from_wire(&other, u->aggregates[i]->name.data, u->aggregates[i]->name.len) == NAME_OK &&
		    name_equal(&other, nm))
			return true;
	return fib_aggregate_find(fib, nm, &id) == FIB_OK &&
	       !in_list(u->aggregates_deleted, u->n_aggregates_deleted, nm);
}

/* A packed list of names: entries [len][wire], each a canonical name, filling it exactly. */
static int packed_of(const ProtobufCBinaryData *b, const char *what, size_t index, char *err, size_t err_len)
{
	size_t k, pos = namelist_scan(b->data, b->len, &k);
	if (pos != b->len)
		return fail(err, err_len, "%s[%zu]: name %zu at byte %zu is not a canonical wire name", what,
			    index, k, pos);
	return 0;
}

static int check_update(struct fib *fib, const Crfib__Update *u, char *err, size_t err_len)
{
	struct name nm;
	struct route routes[ROUTESET_MAX_ROUTES];
	char text[NAME_MAX_TEXT];

	for (size_t i = 0; i < u->n_aggregates_deleted; i++)
		if (name_of(&u->aggregates_deleted[i], &nm, "aggregates_deleted", i, err, err_len) < 0)
			return -1;
	for (size_t i = 0; i < u->n_aggregates; i++) {
		const Crfib__AggregateRoutes *a = u->aggregates[i];
		if (name_of(&a->name, &nm, "aggregates", i, err, err_len) < 0 ||
		    routes_of(a->routes, a->n_routes, routes, "aggregates", i, err, err_len) < 0)
			return -1;
	}
	for (size_t i = 0; i < u->n_memberships; i++) {
		const Crfib__Membership *m = u->memberships[i];
		if (name_of(&m->aggregate, &nm, "memberships", i, err, err_len) < 0)
			return -1;
		if (!aggregate_will_exist(fib, u, &nm)) {
			name_to_text(&nm, text, sizeof(text));
			return fail(err, err_len, "memberships[%zu]: no aggregate '%s'", i, text);
		}
		struct name member;
		for (size_t k = 0; k < m->n_add; k++)
			if (name_of(&m->add[k], &member, "memberships.add", k, err, err_len) < 0)
				return -1;
		for (size_t k = 0; k < m->n_remove; k++)
			if (name_of(&m->remove[k], &member, "memberships.remove", k, err, err_len) < 0)
				return -1;
		if (packed_of(&m->add_packed, "memberships.add_packed", i, err, err_len) < 0 ||
		    packed_of(&m->remove_packed, "memberships.remove_packed", i, err, err_len) < 0)
			return -1;
	}
	for (size_t i = 0; i < u->n_names_packed; i++) {
		const Crfib__NamesRoutes *n = u->names_packed[i];
		if (packed_of(&n->names, "names_packed", i, err, err_len) < 0 ||
		    routes_of(n->routes, n->n_routes, routes, "names_packed", i, err, err_len) < 0)
			return -1;
	}
	for (size_t i = 0; i < u->n_names; i++) {
		const Crfib__NameRoutes *n = u->names[i];
		if (name_of(&n->name, &nm, "names", i, err, err_len) < 0 ||
		    routes_of(n->routes, n->n_routes, routes, "names", i, err, err_len) < 0)
			return -1;
		if (n->redirect.len > 0) {
			struct name target;
			if (n->n_routes > 0)
				return fail(err, err_len, "names[%zu]: both routes and a redirect", i);
			if (name_of(&n->redirect, &target, "names.redirect", i, err, err_len) < 0)
				return -1;
		}
	}
	return 0;
}

/* ---- applying it ---------------------------------------------------- */

static int nomem(const char *what, size_t index, int rc, char *err, size_t err_len)
{
	return fail(err, err_len, "%s[%zu]: %s; update partly applied", what, index, fib_strerror(rc));
}

/* Members joining or leaving in batches (fib.h: one lock, prefetching); a name in too many aggregates
 * stays out of this one, a name that is not a member is not one to remove. */
#define MEMBER_BATCH 256
#define NAME_BATCH 128

static int apply_packed(struct fib *fib, uint32_t id, const ProtobufCBinaryData *b, bool add, size_t index,
			char *err, size_t err_len)
{
	static struct name batch[MEMBER_BATCH];         /* one writer at a time (fib.h) */
	size_t pos = 0;
	while (pos < b->len) {
		size_t n = 0;
		for (; n < MEMBER_BATCH && pos < b->len; n++) {
			batch[n].len = b->data[pos];
			memcpy(batch[n].wire, b->data + pos + 1, batch[n].len);
			pos += 1u + batch[n].len;
		}
		for (size_t from = 0; from < n;) {
			size_t done = 0;
			int rc = add ? fib_aggregate_add_members(fib, id, batch + from, n - from, &done)
				     : fib_aggregate_remove_members(fib, id, batch + from, n - from, &done);
			if (rc == FIB_OK)
				break;
			if (rc != FIB_ERR_TOO_MANY_AGGREGATES && rc != FIB_ERR_NOT_FOUND)
				return nomem(add ? "memberships.add_packed" : "memberships.remove_packed", index, rc,
					     err, err_len);
			from += done + 1;       /* past the one that failed */
		}
	}
	return 0;
}

int fibchan_apply_update(struct fib *fib, const Crfib__Update *u, char *err, size_t err_len)
{
	struct name nm, other;
	struct route routes[ROUTESET_MAX_ROUTES];
	uint32_t id;
	int rc;

	if (check_update(fib, u, err, err_len) < 0)
		return -1;
	/* the checks passed, so names and routes convert without error below */
	for (size_t i = 0; i < u->n_aggregates_deleted; i++) {
		name_from_wire(&nm, u->aggregates_deleted[i].data, u->aggregates_deleted[i].len);
		if (fib_aggregate_find(fib, &nm, &id) == FIB_OK && (rc = fib_aggregate_delete(fib, id)) != FIB_OK)
			return nomem("aggregates_deleted", i, rc, err, err_len);
	}
	for (size_t i = 0; i < u->n_aggregates; i++) {
		const Crfib__AggregateRoutes *a = u->aggregates[i];
		name_from_wire(&nm, a->name.data, a->name.len);
		routes_of(a->routes, a->n_routes, routes, "aggregates", i, err, err_len);
		rc = fib_aggregate_create(fib, &nm, &id);
		if (rc != FIB_OK && rc != FIB_ERR_EXISTS)
			return nomem("aggregates", i, rc, err, err_len);
		if ((rc = fib_aggregate_set_routes(fib, id, routes, (unsigned)a->n_routes)) != FIB_OK)
			return nomem("aggregates", i, rc, err, err_len);
	}
	for (size_t i = 0; i < u->n_memberships; i++) {
		const Crfib__Membership *m = u->memberships[i];
		name_from_wire(&nm, m->aggregate.data, m->aggregate.len);
		fib_aggregate_find(fib, &nm, &id);
		for (size_t k = 0; k < m->n_add; k++) {
			name_from_wire(&other, m->add[k].data, m->add[k].len);
			rc = fib_aggregate_add_member(fib, id, &other);
			/* a name in too many aggregates stays out of this one */
			if (rc != FIB_OK && rc != FIB_ERR_TOO_MANY_AGGREGATES)
				return nomem("memberships.add", k, rc, err, err_len);
		}
		if (apply_packed(fib, id, &m->add_packed, true, i, err, err_len) < 0)
			return -1;
		for (size_t k = 0; k < m->n_remove; k++) {
			name_from_wire(&other, m->remove[k].data, m->remove[k].len);
			rc = fib_aggregate_remove_member(fib, id, &other);
			if (rc != FIB_OK && rc != FIB_ERR_NOT_FOUND)
				return nomem("memberships.remove", k, rc, err, err_len);
		}
		if (apply_packed(fib, id, &m->remove_packed, false, i, err, err_len) < 0)
			return -1;
	}
	/* names in batches (fib.h: one lock, the next names' slots fetched ahead); a redirect
	 * ends a batch, so that the order is kept */
	static struct name batch[NAME_BATCH];
	static struct route batch_routes[NAME_BATCH][ROUTESET_MAX_ROUTES];
	static const struct route *batch_ptrs[NAME_BATCH];
	static unsigned batch_counts[NAME_BATCH];
	size_t first = 0, nb = 0;
	for (size_t i = 0; i <= u->n_names; i++) {
		const Crfib__NameRoutes *n = i < u->n_names ? u->names[i] : NULL;
		if (nb && (!n || n->redirect.len > 0 || nb == NAME_BATCH)) {
			size_t done = 0;
			rc = fib_set_routes_batch(fib, batch, batch_ptrs, batch_counts, nb, &done);
			if (rc != FIB_OK)
				return nomem("names", first + done, rc, err, err_len);
			nb = 0;
		}
		if (!n)
			break;
		if (n->redirect.len > 0) {
			name_from_wire(&nm, n->name.data, n->name.len);
			name_from_wire(&other, n->redirect.data, n->redirect.len);
			if ((rc = fib_set_redirect(fib, &nm, &other)) != FIB_OK)
				return nomem("names", i, rc, err, err_len);
			continue;
		}
		if (!nb)
			first = i;
		name_from_wire(&batch[nb], n->name.data, n->name.len);
		routes_of(n->routes, n->n_routes, batch_routes[nb], "names", i, err, err_len);
		batch_ptrs[nb] = batch_routes[nb];
		batch_counts[nb] = (unsigned)n->n_routes;
		nb++;
	}
	/* packed: every name of a group has the group's routes (checked above) */
	for (size_t i = 0; i < u->n_names_packed; i++) {
		const Crfib__NamesRoutes *n = u->names_packed[i];
		routes_of(n->routes, n->n_routes, batch_routes[0], "names_packed", i, err, err_len);
		const ProtobufCBinaryData *b = &n->names;
		size_t pos = 0;
		while (pos < b->len) {
			nb = 0;
			const uint8_t *w;
			uint8_t l;
			/* checked by packed_of */
			for (; nb < NAME_BATCH && namelist_walk(b->data, b->len, &pos, &w, &l); nb++) {
				batch[nb].len = l;
				memcpy(batch[nb].wire, w, l);
				batch_ptrs[nb] = batch_routes[0];
				batch_counts[nb] = (unsigned)n->n_routes;
			}
			if ((rc = fib_set_routes_batch(fib, batch, batch_ptrs, batch_counts, nb, NULL)) != FIB_OK)
				return nomem("names_packed", i, rc, err, err_len);
		}
	}
	return 0;
}
