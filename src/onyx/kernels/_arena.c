/* A per-session CPU memory arena for numpy's array data (NEP 49 data memory handler).
 *
 * A session allocates and frees the same large intermediates on every run. glibc serves blocks that
 * large with fresh mmap()s (or trims them off the heap top when freed), so each run pays a page fault
 * per page it writes. This handler keeps freed blocks of at least ONYX_ARENA_MIN bytes in a cache and
 * hands them back to later requests of the same size class, as onnxruntime's CPU arena does, without
 * changing the process's malloc settings: it applies only where it is installed (numpy keeps the
 * handler in a context variable: the current thread/context), and each array frees through the
 * handler that allocated it.
 *
 * Every block carries a 16-byte header right before the pointer numpy sees, holding its usable size
 * and the distance back to what the allocator returned, so free and realloc work for any block. Small
 * blocks go to numpy's default allocator. Large ones are 64-byte aligned. The cache is a list in free order,
 * bounded by a byte limit (oldest evicted first); a lock guards it; nothing here calls Python and any
 * request the cache cannot serve falls back to malloc. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#include <stdint.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#define NPY_NO_DEPRECATED_API NPY_1_23_API_VERSION
#include <numpy/arrayobject.h>

#define ONYX_ARENA_MIN ((size_t)256 << 10) /* smaller blocks are not cached */
#define ONYX_ARENA_GRAIN ((size_t)64 << 10) /* size classes: multiples of 64 KiB ... */
#define ONYX_ARENA_ALIGN ((size_t)64)
#define ONYX_ARENA_HUGE ((size_t)4 << 20) /* blocks this large ask for huge pages, as numpy's do */
#define ONYX_ARENA_MAGIC ((uint32_t)0x0A7E4A5Bu)
#define CAPSULE_NAME "mem_handler" /* the name numpy requires of a handler capsule */

typedef struct {
    size_t capacity; /* usable bytes after the header */
    uint32_t offset; /* bytes from malloc's pointer to the user pointer */
    uint32_t magic;
} header_t;

/* A cached block's own (free) memory holds its links. */
typedef struct cached {
    struct cached *prev, *next;
} cached_t;

typedef struct {
    PyThread_type_lock lock;
    cached_t *oldest, *newest; /* the cache, in the order blocks were freed */
    size_t limit;              /* most bytes the cache holds */
    size_t cached_bytes;
    size_t cached_blocks;
    unsigned long long hits, misses, evictions;
    size_t max_request;        /* larger requests fail (numpy raises MemoryError); 0: no bound */
    unsigned long long refused; /* requests refused for max_request (read for stats only) */
} arena_t;

static inline header_t *header_of(void *p) { return (header_t *)((char *)p - sizeof(header_t)); }

/* ... rounded to an eighth of their power of two past 2 MiB, so a class wastes at most ~12%. */
static size_t size_class(size_t n) {
    size_t grain = ONYX_ARENA_GRAIN;
    while (grain < n / 16 && grain < ((size_t)1 << 40)) grain <<= 1;
    if (n > SIZE_MAX - grain) return 0;
    return (n + grain - 1) / grain * grain;
}

/* Small blocks come from numpy's default allocator (it keeps a cache of tiny ones), behind the header. */
static PyDataMemAllocator numpy_default;

static void *small_alloc(size_t n, int zero) {
    if (n > SIZE_MAX - sizeof(header_t)) return NULL;
    const size_t total = n + sizeof(header_t);
    char *base = zero ? numpy_default.calloc(numpy_default.ctx, 1, total)
                      : numpy_default.malloc(numpy_default.ctx, total);
    if (base == NULL) return NULL;
    header_t *h = (header_t *)base;
    h->capacity = n;
    h->offset = sizeof(header_t);
    h->magic = ONYX_ARENA_MAGIC;
    return base + sizeof(header_t);
}

static void small_free(void *p) {
    header_t *h = header_of(p);
    numpy_default.free(numpy_default.ctx, (char *)p - h->offset, h->capacity + sizeof(header_t));
}

/* A new large block of `capacity` bytes from the system, 64-byte aligned. */
static void *fresh_large(size_t capacity, int zero) {
    const size_t extra = ONYX_ARENA_ALIGN + sizeof(header_t);
    if (capacity > SIZE_MAX - extra) return NULL;
    char *base = zero ? calloc(1, capacity + extra) : malloc(capacity + extra);
    if (base == NULL) return NULL;
    uintptr_t user = ((uintptr_t)base + sizeof(header_t) + ONYX_ARENA_ALIGN - 1) & ~(uintptr_t)(ONYX_ARENA_ALIGN - 1);
    header_t *h = header_of((void *)user);
    h->capacity = capacity;
    h->offset = (uint32_t)(user - (uintptr_t)base);
    h->magic = ONYX_ARENA_MAGIC;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (capacity >= ONYX_ARENA_HUGE) { /* numpy's default allocator does the same (fewer TLB misses) */
        const uintptr_t page = 4096, start = (user + page - 1) & ~(page - 1);
        const uintptr_t end = (user + capacity) & ~(page - 1);
        if (end > start) madvise((void *)start, end - start, MADV_HUGEPAGE);
    }
#endif
    return (void *)user;
}

static void system_free(void *p) {
    header_t *h = header_of(p);
    free((char *)p - h->offset);
}

static void unlink_block(arena_t *a, cached_t *c) {
    if (c->prev) c->prev->next = c->next; else a->oldest = c->next;
    if (c->next) c->next->prev = c->prev; else a->newest = c->prev;
    a->cached_bytes -= header_of(c)->capacity;
    a->cached_blocks--;
}

/* The cached block that fits `capacity` best (at most a quarter larger), taken out of the cache; NULL if
 * none. Called with the lock held. */
static void *take_cached(arena_t *a, size_t capacity) {
    cached_t *best = NULL;
    size_t best_cap = capacity + capacity / 4 + 1;
    for (cached_t *c = a->newest; c != NULL; c = c->prev) {
        size_t cap = header_of(c)->capacity;
        if (cap >= capacity && cap < best_cap) {
            best = c;
            best_cap = cap;
            if (cap == capacity) break;
        }
    }
    if (best != NULL) unlink_block(a, best);
    return best;
}

static void *large_alloc(arena_t *a, size_t n, int zero) {
    const size_t capacity = size_class(n);
    if (capacity == 0) return NULL;
    PyThread_acquire_lock(a->lock, WAIT_LOCK);
    void *p = take_cached(a, capacity);
    if (p != NULL) a->hits++; else a->misses++;
    PyThread_release_lock(a->lock);
    if (p == NULL) return fresh_large(capacity, zero);
    if (zero) memset(p, 0, n);
    return p;
}

/* Takes the oldest cached blocks out until at most `target` bytes stay, releases the lock (held on
 * entry), then frees them. */
static void trim_to(arena_t *a, size_t target) {
    cached_t *evicted = NULL;
    while (a->oldest != NULL && a->cached_bytes > target) {
        cached_t *c = a->oldest;
        unlink_block(a, c);
        a->evictions++;
        c->next = evicted;
        evicted = c;
    }
    PyThread_release_lock(a->lock);
    while (evicted != NULL) {
        cached_t *next = evicted->next;
        system_free(evicted);
        evicted = next;
    }
}

static void large_free(arena_t *a, void *p) {
    const size_t capacity = header_of(p)->capacity;
    PyThread_acquire_lock(a->lock, WAIT_LOCK);
    if (capacity > a->limit) {
        PyThread_release_lock(a->lock);
        system_free(p);
        return;
    }
    cached_t *c = (cached_t *)p;
    c->next = NULL;
    c->prev = a->newest;
    if (a->newest) a->newest->next = c; else a->oldest = c;
    a->newest = c;
    a->cached_bytes += capacity;
    a->cached_blocks++;
    trim_to(a, a->limit); /* releases the lock */
}

/* -- the allocator numpy calls ------------------------------------------------------------------ */
/* A request past the session's bound fails here, before the system promises memory it cannot give
 * (Linux overcommits: the process would be killed when the pages are touched, not refused now). */
static inline int refused(arena_t *a, size_t n) {
    const size_t bound = a->max_request;
    if (bound == 0 || n <= bound) return 0;
    a->refused++; /* a statistic: an unlocked count may miss a concurrent refusal */
    return 1;
}

static void *arena_malloc(void *ctx, size_t n) {
    arena_t *a = (arena_t *)ctx;
    if (refused(a, n)) return NULL;
    return n >= ONYX_ARENA_MIN ? large_alloc(a, n, 0) : small_alloc(n, 0);
}

static void *arena_calloc(void *ctx, size_t nelem, size_t elsize) {
    if (elsize != 0 && nelem > SIZE_MAX / elsize) return NULL;
    const size_t n = nelem * elsize;
    arena_t *a = (arena_t *)ctx;
    if (refused(a, n)) return NULL;
    return n >= ONYX_ARENA_MIN ? large_alloc(a, n, 1) : small_alloc(n, 1);
}

static void arena_free(void *ctx, void *p, size_t size) {
    (void)size; /* the header knows the block's size */
    if (p == NULL) return;
    if (header_of(p)->capacity >= ONYX_ARENA_MIN) large_free((arena_t *)ctx, p);
    else small_free(p);
}

static void *arena_realloc(void *ctx, void *p, size_t n) {
    if (p == NULL) return arena_malloc(ctx, n);
    if (refused((arena_t *)ctx, n)) return NULL; /* as realloc: the old block stays valid */
    header_t *h = header_of(p);
    const size_t capacity = h->capacity;
    if (capacity < ONYX_ARENA_MIN && n < ONYX_ARENA_MIN) { /* small stays small: numpy's realloc */
        if (n > SIZE_MAX - sizeof(header_t)) return NULL;
        char *base = numpy_default.realloc(numpy_default.ctx, (char *)p - h->offset, n + sizeof(header_t));
        if (base == NULL) return NULL;
        ((header_t *)base)->capacity = n;
        return base + sizeof(header_t);
    }
    if (capacity >= ONYX_ARENA_MIN && n <= capacity && n >= ONYX_ARENA_MIN) return p; /* still fits */
    void *q = arena_malloc(ctx, n);
    if (q == NULL) return NULL; /* as realloc: the old block stays valid */
    memcpy(q, p, n < capacity ? n : capacity);
    arena_free(ctx, p, capacity);
    return q;
}

/* -- the module: handler capsules ------------------------------------------------------------------ */
static void empty_cache(arena_t *a) {
    PyThread_acquire_lock(a->lock, WAIT_LOCK);
    trim_to(a, 0); /* releases the lock */
}

static void capsule_destructor(PyObject *capsule) {
    /* numpy holds a reference to the handler of every array it allocated: this runs after the last
     * of them was freed */
    PyDataMem_Handler *handler = PyCapsule_GetPointer(capsule, CAPSULE_NAME);
    if (handler == NULL) {
        PyErr_Clear();
        return;
    }
    arena_t *a = handler->allocator.ctx;
    empty_cache(a);
    PyThread_free_lock(a->lock);
    free(a);
    free(handler);
}

static arena_t *arena_of(PyObject *capsule) {
    if (!PyCapsule_IsValid(capsule, CAPSULE_NAME) ||
        PyCapsule_GetDestructor(capsule) != capsule_destructor) {
        PyErr_SetString(PyExc_TypeError, "expected a handler made by onyx.kernels._arena.new");
        return NULL;
    }
    PyDataMem_Handler *handler = PyCapsule_GetPointer(capsule, CAPSULE_NAME);
    return handler == NULL ? NULL : handler->allocator.ctx;
}

static PyObject *arena_new(PyObject *self, PyObject *args) {
    (void)self;
    unsigned long long limit;
    const char *name;
    if (!PyArg_ParseTuple(args, "Ks", &limit, &name)) return NULL;
    PyDataMem_Handler *handler = calloc(1, sizeof(PyDataMem_Handler));
    arena_t *a = calloc(1, sizeof(arena_t));
    PyThread_type_lock lock = PyThread_allocate_lock();
    if (handler == NULL || a == NULL || lock == NULL) {
        free(handler);
        free(a);
        if (lock) PyThread_free_lock(lock);
        return PyErr_NoMemory();
    }
    a->lock = lock;
    a->limit = (size_t)limit;
    snprintf(handler->name, sizeof(handler->name), "%s", name);
    handler->version = 1;
    handler->allocator.ctx = a;
    handler->allocator.malloc = arena_malloc;
    handler->allocator.calloc = arena_calloc;
    handler->allocator.realloc = arena_realloc;
    handler->allocator.free = arena_free;
    PyObject *capsule = PyCapsule_New(handler, CAPSULE_NAME, capsule_destructor);
    if (capsule == NULL) {
        PyThread_free_lock(lock);
        free(a);
        free(handler);
    }
    return capsule;
}

static PyObject *arena_install(PyObject *self, PyObject *capsule) {
    (void)self;
    if (arena_of(capsule) == NULL) return NULL;
    return PyDataMem_SetHandler(capsule); /* the previous handler (a new reference) */
}

static PyObject *arena_restore(PyObject *self, PyObject *previous) {
    (void)self;
    PyObject *mine = PyDataMem_SetHandler(previous == Py_None ? NULL : previous);
    if (mine == NULL) return NULL;
    Py_DECREF(mine);
    Py_RETURN_NONE;
}

static PyObject *arena_release(PyObject *self, PyObject *capsule) {
    (void)self;
    arena_t *a = arena_of(capsule);
    if (a == NULL) return NULL;
    empty_cache(a);
    Py_RETURN_NONE;
}

static PyObject *arena_set_limit(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *capsule;
    unsigned long long limit;
    if (!PyArg_ParseTuple(args, "OK", &capsule, &limit)) return NULL;
    arena_t *a = arena_of(capsule);
    if (a == NULL) return NULL;
    PyThread_acquire_lock(a->lock, WAIT_LOCK);
    a->limit = (size_t)limit;
    trim_to(a, a->limit); /* releases the lock */
    Py_RETURN_NONE;
}

static PyObject *arena_set_max_request(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *capsule;
    unsigned long long bound;
    if (!PyArg_ParseTuple(args, "OK", &capsule, &bound)) return NULL;
    arena_t *a = arena_of(capsule);
    if (a == NULL) return NULL;
    a->max_request = (size_t)bound;
    Py_RETURN_NONE;
}

static PyObject *arena_stats(PyObject *self, PyObject *capsule) {
    (void)self;
    arena_t *a = arena_of(capsule);
    if (a == NULL) return NULL;
    PyThread_acquire_lock(a->lock, WAIT_LOCK);
    const unsigned long long bytes = a->cached_bytes, blocks = a->cached_blocks, limit = a->limit;
    const unsigned long long hits = a->hits, misses = a->misses, evictions = a->evictions;
    const unsigned long long max_request = a->max_request, refusals = a->refused;
    PyThread_release_lock(a->lock);
    return Py_BuildValue("{sKsKsKsKsKsKsKsK}", "cached_bytes", bytes, "cached_blocks", blocks, "limit", limit,
                         "hits", hits, "misses", misses, "evictions", evictions, "max_request", max_request,
                         "refused", refusals);
}

static PyMethodDef methods[] = {
    {"new", arena_new, METH_VARARGS, "new(limit_bytes, name): a numpy data memory handler with its own cache."},
    {"install", arena_install, METH_O, "install(handler): make it the current context's; returns the previous."},
    {"restore", arena_restore, METH_O, "restore(previous): put back the handler install() returned."},
    {"release", arena_release, METH_O, "release(handler): free every block in its cache."},
    {"set_limit", arena_set_limit, METH_VARARGS, "set_limit(handler, limit_bytes): bound its cache."},
    {"set_max_request", arena_set_max_request, METH_VARARGS,
     "set_max_request(handler, bytes): refuse larger requests (0: no bound)."},
    {"stats", arena_stats, METH_O, "stats(handler): cache bytes, blocks, limit, hits, misses, evictions, refusals."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_arena", "A per-session memory arena for numpy's array data.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__arena(void) {
    import_array();
    PyDataMem_Handler *numpy_handler = PyCapsule_GetPointer(PyDataMem_DefaultHandler, CAPSULE_NAME);
    if (numpy_handler == NULL) return NULL;
    numpy_default = numpy_handler->allocator; /* numpy's default handler is static: it never goes */
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "MIN_CACHED", (long)ONYX_ARENA_MIN) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
