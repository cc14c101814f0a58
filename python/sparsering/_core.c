/* sparsering._core: the CPython binding of the public C API (include/sparsering.h).
 *
 * Thin by design: handles (Context, Matrix) and one function per C call. Arrays cross as
 * buffers (numpy arrays without copies); their lengths are checked here against what the C
 * call will read or write, since the library trusts the pointers it is given. Shapes, types
 * and every other argument are checked by the library itself, whose messages become the
 * exceptions. The GIL is released while the library works. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "sparsering.h"

/* ------------------------------------------------------------------ errors */

static PyObject *error_for_status[SR_ERROR_CANCELLED + 1];

/* Raises the exception of status s with the library's message; returns NULL. */
static PyObject *raise_status(sr_status s)
{
    PyObject *cls = s > 0 && s <= SR_ERROR_CANCELLED ? error_for_status[s] : error_for_status[SR_ERROR_INTERNAL];
    const char *msg = sr_last_error();
    PyObject *exc = PyObject_CallFunction(cls, "s", msg && *msg ? msg : sr_status_name(s));
    if (!exc)
        return NULL;
    PyObject *name = PyUnicode_FromString(sr_status_name(s));
    if (name) {
        PyObject_SetAttrString(exc, "status", name);
        Py_DECREF(name);
    }
    PyErr_SetObject(cls, exc);
    Py_DECREF(exc);
    return NULL;
}

#define TRY(call)                                                                                                      \
    do {                                                                                                               \
        sr_status status_;                                                                                             \
        Py_BEGIN_ALLOW_THREADS status_ = (call);                                                                       \
        Py_END_ALLOW_THREADS if (status_ != SR_SUCCESS) return raise_status(status_);                                  \
    } while (0)

/* A buffer must hold `need` bytes for what the C call reads or writes. */
static int check_bytes(const Py_buffer *b, size_t need, const char *what)
{
    if ((size_t)b->len < need) {
        PyErr_Format(PyExc_ValueError, "%s holds %zd bytes, %zu needed", what, b->len, need);
        return -1;
    }
    return 0;
}

/* A writable, contiguous (either order) buffer of obj; 0 on success. */
static int writable_buffer(PyObject *obj, Py_buffer *b)
{
    b->obj = NULL;
    return PyObject_GetBuffer(obj, b, PyBUF_WRITABLE | PyBUF_ANY_CONTIGUOUS) != 0 ? -1 : 0;
}

static void release_buffer(Py_buffer *b)
{
    if (b->obj)
        PyBuffer_Release(b);
}

/* obj's bytes: a host object with the buffer protocol, or a device array passed as the tuple
 * (pointer, bytes), which python/sparsering/_device.py builds from __cuda_array_interface__ or
 * DLPack and keeps alive for the call. A device array's b->buf and b->len describe device
 * memory and b->obj stays NULL (release_buffer skips it); *where says which it is. */
static int get_array(PyObject *obj, Py_buffer *b, int writable, int order, sr_location *where)
{
    b->obj = NULL;
    *where = SR_HOST;
    if (PyTuple_Check(obj) && PyTuple_GET_SIZE(obj) == 2 && PyLong_Check(PyTuple_GET_ITEM(obj, 0))) {
        void *ptr = PyLong_AsVoidPtr(PyTuple_GET_ITEM(obj, 0));
        Py_ssize_t len = PyLong_AsSsize_t(PyTuple_GET_ITEM(obj, 1));
        if (PyErr_Occurred())
            return -1;
        if (len < 0) {
            PyErr_SetString(PyExc_ValueError, "a device array's byte count is negative");
            return -1;
        }
        b->buf = ptr;
        b->len = len;
        *where = SR_DEVICE;
        return 0;
    }
    return PyObject_GetBuffer(obj, b, (writable ? PyBUF_WRITABLE : 0) | order) != 0 ? -1 : 0;
}

/* The arrays of one call live in one place: host arrays with host arrays, device with device. */
static int same_place(const sr_location *where, int n, const char *what)
{
    for (int i = 1; i < n; i++)
        if (where[i] != where[0]) {
            PyErr_Format(PyExc_ValueError, "%s: mixes host (numpy) and device (cupy/torch) arrays", what);
            return -1;
        }
    return 0;
}

/* ------------------------------------------------------------------ Context */

typedef struct {
    PyObject_HEAD sr_context ctx;
} ContextObject;

static PyTypeObject ContextType;

static int context_init(ContextObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"backend", "device", "threads", "workspace_limit", "host_memory_limit", "devices",
                            "partition", "deterministic", "asynchronous", NULL};
    sr_context_options o = sr_context_options_default();
    int backend = (int)o.backend, partition = (int)o.partition;
    unsigned long long workspace = 0, host = 0;
    PyObject *devices = NULL;
    int deterministic = 0, asynchronous = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|iiiKKOipp", names, &backend, &o.device, &o.threads, &workspace, &host,
                                     &devices, &partition, &deterministic, &asynchronous))
        return -1;
    o.deterministic = deterministic != 0;
    o.asynchronous = asynchronous != 0;
    if (devices != NULL && devices != Py_None) { /* a sequence of CUDA ordinals */
        PyObject *seq = PySequence_Fast(devices, "devices must be a sequence of CUDA device numbers");
        if (seq == NULL)
            return -1;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        if (n > SR_MAX_DEVICES) {
            Py_DECREF(seq);
            PyErr_Format(PyExc_ValueError, "at most %d devices, not %zd", SR_MAX_DEVICES, n);
            return -1;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            long d = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, i));
            if (d == -1 && PyErr_Occurred()) {
                Py_DECREF(seq);
                return -1;
            }
            o.devices[i] = (int)d;
        }
        o.ndevices = (int)n;
        Py_DECREF(seq);
    }
    o.partition = (sr_partition)partition;
    o.backend = (sr_backend)backend;
    o.workspace_limit = (size_t)workspace;
    o.host_memory_limit = (size_t)host;
    if (self->ctx) {
        sr_context_destroy(self->ctx);
        self->ctx = NULL;
    }
    sr_status s;
    Py_BEGIN_ALLOW_THREADS s = sr_context_create(&self->ctx, &o);
    Py_END_ALLOW_THREADS if (s != SR_SUCCESS)
    {
        raise_status(s);
        return -1;
    }
    return 0;
}

static void context_dealloc(ContextObject *self)
{
    sr_context_destroy(self->ctx);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static sr_context ctx_of(PyObject *o)
{
    if (!PyObject_TypeCheck(o, &ContextType) || !((ContextObject *)o)->ctx) {
        PyErr_SetString(PyExc_TypeError, "expected a sparsering Context");
        return NULL;
    }
    return ((ContextObject *)o)->ctx;
}

static PyObject *context_backend(ContextObject *self, PyObject *unused)
{
    (void)unused;
    sr_backend b;
    TRY(sr_context_get_backend(self->ctx, &b));
    return PyLong_FromLong((long)b);
}

static PyObject *context_options(ContextObject *self, PyObject *unused)
{
    (void)unused;
    sr_context_options o;
    TRY(sr_context_get_options(self->ctx, &o));
    PyObject *devices = PyList_New(0);
    if (devices == NULL)
        return NULL;
    for (int g = 0; g < o.ndevices; g++) {
        PyObject *d = PyLong_FromLong(o.devices[g]);
        if (d == NULL || PyList_Append(devices, d) != 0) {
            Py_XDECREF(d);
            Py_DECREF(devices);
            return NULL;
        }
        Py_DECREF(d);
    }
    return Py_BuildValue("{s:i,s:i,s:i,s:K,s:K,s:N,s:i,s:O,s:O}", "backend", (int)o.backend, "device", o.device,
                         "threads", o.threads, "workspace_limit", (unsigned long long)o.workspace_limit,
                         "host_memory_limit", (unsigned long long)o.host_memory_limit, "devices", devices, "partition",
                         (int)o.partition, "deterministic", o.deterministic ? Py_True : Py_False, "asynchronous",
                         o.asynchronous ? Py_True : Py_False);
}

static PyObject *context_synchronize(ContextObject *self, PyObject *unused)
{
    (void)unused;
    TRY(sr_context_synchronize(self->ctx));
    Py_RETURN_NONE;
}

static PyObject *context_device_memory(ContextObject *self, PyObject *unused)
{
    (void)unused;
    size_t now = 0, peak = 0;
    TRY(sr_context_device_memory(self->ctx, &now, &peak));
    return Py_BuildValue("(KK)", (unsigned long long)now, (unsigned long long)peak);
}

static PyObject *context_reset_peak_memory(ContextObject *self, PyObject *unused)
{
    (void)unused;
    TRY(sr_context_reset_peak_memory(self->ctx));
    Py_RETURN_NONE;
}

static PyObject *context_set_threads(ContextObject *self, PyObject *arg)
{
    int threads = PyLong_AsLong(arg);
    if (threads == -1 && PyErr_Occurred())
        return NULL;
    TRY(sr_context_set_threads(self->ctx, threads));
    Py_RETURN_NONE;
}

/* A byte count from Python, handed to one of the context's size setters. */
static PyObject *set_context_bytes(ContextObject *self, PyObject *arg, sr_status (*setter)(sr_context, size_t))
{
    unsigned long long bytes = PyLong_AsUnsignedLongLong(arg);
    if (bytes == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    TRY(setter(self->ctx, (size_t)bytes));
    Py_RETURN_NONE;
}

static PyObject *context_set_workspace_limit(ContextObject *self, PyObject *arg)
{
    return set_context_bytes(self, arg, sr_context_set_workspace_limit);
}

static PyObject *context_set_host_memory_limit(ContextObject *self, PyObject *arg)
{
    return set_context_bytes(self, arg, sr_context_set_host_memory_limit);
}

/* A switch from Python, handed to one of the context's on/off setters. */
static PyObject *set_context_switch(ContextObject *self, PyObject *arg, sr_status (*setter)(sr_context, bool))
{
    const int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    TRY(setter(self->ctx, on != 0));
    Py_RETURN_NONE;
}

static PyObject *context_set_deterministic(ContextObject *self, PyObject *arg)
{
    return set_context_switch(self, arg, sr_context_set_deterministic);
}

static PyObject *context_set_asynchronous(ContextObject *self, PyObject *arg)
{
    return set_context_switch(self, arg, sr_context_set_asynchronous);
}

static PyMethodDef context_methods[] = {
    {"backend", (PyCFunction)context_backend, METH_NOARGS, "The resolved backend: 1 cpu, 2 cuda, 3 opencl."},
    {"options", (PyCFunction)context_options, METH_NOARGS, "The context's options as a dict."},
    {"synchronize", (PyCFunction)context_synchronize, METH_NOARGS, "Waits for device work."},
    {"device_memory", (PyCFunction)context_device_memory, METH_NOARGS, "(current, peak) device bytes."},
    {"reset_peak_memory", (PyCFunction)context_reset_peak_memory, METH_NOARGS, "Resets the peak."},
    {"set_threads", (PyCFunction)context_set_threads, METH_O, "CPU threads (0: OpenMP's default)."},
    {"set_workspace_limit", (PyCFunction)context_set_workspace_limit, METH_O, "Workspace bytes (0: automatic)."},
    {"set_host_memory_limit", (PyCFunction)context_set_host_memory_limit, METH_O,
     "Bytes one host allocation may take (0: no fixed limit)."},
    {"set_deterministic", (PyCFunction)context_set_deterministic, METH_O,
     "Sums in a fixed order on the GPU: the same bits on every run."},
    {"set_asynchronous", (PyCFunction)context_set_asynchronous, METH_O,
     "CUDA: spmv, spmm and the fused pattern return queued when every operand is on the device."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject ContextType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sparsering._core.Context",
    .tp_basicsize = sizeof(ContextObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Context(backend=0, device=0, threads=0, workspace_limit=0, host_memory_limit=0): a sparsering context.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)context_init,
    .tp_dealloc = (destructor)context_dealloc,
    .tp_methods = context_methods,
};

/* ------------------------------------------------------------------ Matrix */

typedef struct {
    PyObject_HEAD sr_matrix m;
    PyObject *context; /* the ContextObject it was made with */
} MatrixObject;

static PyTypeObject MatrixType;

/* Wraps a new handle (taking ownership). */
static PyObject *wrap_matrix(PyObject *context, sr_matrix m)
{
    MatrixObject *o = PyObject_New(MatrixObject, &MatrixType);
    if (!o) {
        sr_matrix_free(m);
        return NULL;
    }
    o->m = m;
    Py_INCREF(context);
    o->context = context;
    return (PyObject *)o;
}

static void matrix_dealloc(MatrixObject *self)
{
    sr_matrix_free(self->m);
    Py_XDECREF(self->context);
    PyObject_Free(self);
}

/* The handle of a Matrix argument; None gives NULL without an error when allowed. */
static int matrix_arg(PyObject *o, sr_matrix *m, int none_ok, const char *what)
{
    if (o == Py_None && none_ok) {
        *m = NULL;
        return 0;
    }
    if (!PyObject_TypeCheck(o, &MatrixType)) {
        PyErr_Format(PyExc_TypeError, "%s must be a sparsering matrix", what);
        return -1;
    }
    *m = ((MatrixObject *)o)->m;
    return 0;
}

static int info_of(sr_matrix m, sr_matrix_info *info)
{
    sr_status s = sr_matrix_get_info(m, info);
    if (s != SR_SUCCESS) {
        raise_status(s);
        return -1;
    }
    return 0;
}

static PyObject *matrix_info(MatrixObject *self, PyObject *unused)
{
    (void)unused;
    sr_matrix_info i;
    if (info_of(self->m, &i))
        return NULL;
    return Py_BuildValue("(LLLiii)", (long long)i.nrows, (long long)i.ncols, (long long)i.nnz, (int)i.type,
                         (int)i.location, i.device);
}

/* m's CSR arrays into indptr, indices and values (or None): host arrays, or device arrays, copied
 * through ctx. */
static PyObject *export_csr_into(sr_context ctx, sr_matrix m, PyObject *indptr, PyObject *indices, PyObject *values)
{
    Py_buffer p = {0}, c = {0}, v = {0};
    PyObject *result = NULL;
    sr_matrix_info i;
    int want_values = values != Py_None;
    sr_location where[3] = {SR_HOST, SR_HOST, SR_HOST};
    if (get_array(indptr, &p, 1, PyBUF_C_CONTIGUOUS, &where[0]) ||
        get_array(indices, &c, 1, PyBUF_C_CONTIGUOUS, &where[1]) ||
        (want_values && get_array(values, &v, 1, PyBUF_C_CONTIGUOUS, &where[2])) ||
        same_place(where, want_values ? 3 : 2, "export_csr"))
        goto done;
    if (info_of(m, &i) || check_bytes(&p, (size_t)(i.nrows + 1) * 8, "indptr") ||
        check_bytes(&c, (size_t)i.nnz * 4, "indices") ||
        (want_values && check_bytes(&v, (size_t)i.nnz * sr_type_size(i.type), "values")))
        goto done;
    sr_status s;
    Py_BEGIN_ALLOW_THREADS s = sr_matrix_export_csr(ctx, m, p.buf, c.buf, want_values ? v.buf : NULL, where[0]);
    Py_END_ALLOW_THREADS if (s != SR_SUCCESS) raise_status(s);
    else
    {
        Py_INCREF(Py_None);
        result = Py_None;
    }
done:
    release_buffer(&p);
    release_buffer(&c);
    release_buffer(&v);
    return result;
}

/* export_csr(indptr_out, indices_out, values_out or None): host arrays, or device arrays. */
static PyObject *matrix_export_csr(MatrixObject *self, PyObject *args)
{
    PyObject *indptr, *indices, *values;
    if (!PyArg_ParseTuple(args, "OOO", &indptr, &indices, &values))
        return NULL;
    return export_csr_into(((ContextObject *)self->context)->ctx, self->m, indptr, indices, values);
}

/* export_dense(out, layout): every element, host. */
static PyObject *matrix_export_dense(MatrixObject *self, PyObject *args)
{
    Py_buffer b;
    PyObject *out;
    int layout;
    if (!PyArg_ParseTuple(args, "Oi", &out, &layout) || writable_buffer(out, &b))
        return NULL;
    sr_matrix_info i;
    PyObject *result = NULL;
    if (!info_of(self->m, &i) &&
        !check_bytes(&b, (size_t)(i.nrows * i.ncols) * sr_type_size(i.type), "the dense output")) {
        sr_dense d = sr_dense_view(b.buf, i.nrows, i.ncols, i.type, (sr_layout)layout, SR_HOST);
        sr_status s;
        Py_BEGIN_ALLOW_THREADS s = sr_matrix_export_dense(((ContextObject *)self->context)->ctx, self->m, &d);
        Py_END_ALLOW_THREADS if (s != SR_SUCCESS) raise_status(s);
        else
        {
            Py_INCREF(Py_None);
            result = Py_None;
        }
    }
    PyBuffer_Release(&b);
    return result;
}

static PyObject *matrix_copy_to(MatrixObject *self, PyObject *arg)
{
    int where = (int)PyLong_AsLong(arg);
    if (where == -1 && PyErr_Occurred())
        return NULL;
    sr_matrix out = NULL;
    TRY(sr_matrix_copy_to(((ContextObject *)self->context)->ctx, self->m, (sr_location)where, &out));
    return wrap_matrix(self->context, out);
}

static PyObject *matrix_transpose(MatrixObject *self, PyObject *unused)
{
    (void)unused;
    sr_matrix out = NULL;
    TRY(sr_matrix_transpose(((ContextObject *)self->context)->ctx, self->m, &out));
    return wrap_matrix(self->context, out);
}

static PyObject *matrix_cast(MatrixObject *self, PyObject *arg)
{
    int type = (int)PyLong_AsLong(arg);
    if (type == -1 && PyErr_Occurred())
        return NULL;
    sr_matrix out = NULL;
    TRY(sr_matrix_cast(((ContextObject *)self->context)->ctx, self->m, (sr_type)type, &out));
    return wrap_matrix(self->context, out);
}

static PyObject *matrix_dup(MatrixObject *self, PyObject *unused)
{
    (void)unused;
    sr_matrix out = NULL;
    TRY(sr_matrix_dup(((ContextObject *)self->context)->ctx, self->m, &out));
    return wrap_matrix(self->context, out);
}

static PyObject *matrix_equal(MatrixObject *self, PyObject *arg)
{
    sr_matrix other;
    if (matrix_arg(arg, &other, 0, "other"))
        return NULL;
    bool eq = false;
    TRY(sr_matrix_equal(((ContextObject *)self->context)->ctx, self->m, other, &eq));
    return PyBool_FromLong(eq);
}

static PyObject *matrix_write_mm(MatrixObject *self, PyObject *args)
{
    const char *path, *comment = NULL;
    int array = 0, symmetric = 0;
    if (!PyArg_ParseTuple(args, "s|ppz", &path, &array, &symmetric, &comment))
        return NULL;
    sr_mm_write_options o = {array != 0, symmetric != 0, comment};
    TRY(sr_matrix_write_mm(((ContextObject *)self->context)->ctx, self->m, path, &o));
    Py_RETURN_NONE;
}

static PyObject *matrix_context(MatrixObject *self, void *unused)
{
    (void)unused;
    Py_INCREF(self->context);
    return self->context;
}

static PyMethodDef matrix_methods[] = {
    {"info", (PyCFunction)matrix_info, METH_NOARGS, "(nrows, ncols, nnz, type, location, device)."},
    {"export_csr", (PyCFunction)matrix_export_csr, METH_VARARGS, "Copies out into host CSR arrays."},
    {"export_dense", (PyCFunction)matrix_export_dense, METH_VARARGS, "Copies out into a host dense array."},
    {"copy_to", (PyCFunction)matrix_copy_to, METH_O, "A copy in location 0 (host) or 1 (device)."},
    {"transpose", (PyCFunction)matrix_transpose, METH_NOARGS, "The transpose."},
    {"cast", (PyCFunction)matrix_cast, METH_O, "A copy with another value type."},
    {"dup", (PyCFunction)matrix_dup, METH_NOARGS, "A copy."},
    {"equal", (PyCFunction)matrix_equal, METH_O, "Same shape, type, pattern and values."},
    {"write_mm", (PyCFunction)matrix_write_mm, METH_VARARGS, "write_mm(path, array, symmetric, comment)."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef matrix_getset[] = {{"context", (getter)matrix_context, NULL, "The Context.", NULL},
                                      {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject MatrixType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "sparsering._core.Matrix",
    .tp_basicsize = sizeof(MatrixObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A sparsering CSR matrix handle (make one with from_csr, from_coo, from_dense or read_mm).",
    .tp_dealloc = (destructor)matrix_dealloc,
    .tp_methods = matrix_methods,
    .tp_getset = matrix_getset,
};

/* ------------------------------------------------------------------ construction */

/* from_csr(ctx, nrows, ncols, type, indptr int64, indices int32, values or None): host arrays, or
 * device arrays (copied on the device and validated there; the package has checked that indptr's
 * last entry is the length of indices) */
static PyObject *from_csr(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *values, *indptr, *indices, *result = NULL;
    long long nrows, ncols;
    int type;
    Py_buffer p = {0}, c = {0}, v = {0};
    if (!PyArg_ParseTuple(args, "OLLiOOO", &context, &nrows, &ncols, &type, &indptr, &indices, &values))
        return NULL;
    sr_context ctx = ctx_of(context);
    int has_values = values != Py_None;
    sr_location where[3] = {SR_HOST, SR_HOST, SR_HOST};
    if (!ctx || get_array(indptr, &p, 0, PyBUF_C_CONTIGUOUS, &where[0]) ||
        get_array(indices, &c, 0, PyBUF_C_CONTIGUOUS, &where[1]) ||
        (has_values && get_array(values, &v, 0, PyBUF_C_CONTIGUOUS, &where[2])) ||
        same_place(where, has_values ? 3 : 2, "from_csr"))
        goto done;
    if (nrows < 0 || check_bytes(&p, (size_t)(nrows + 1) * 8, "indptr"))
        goto done;
    const int64_t nnz = where[0] == SR_DEVICE ? (int64_t)(c.len / 4) : ((const int64_t *)p.buf)[nrows];
    if (nnz < 0 || check_bytes(&c, (size_t)nnz * 4, "indices") ||
        (has_values && type >= 0 && type <= SR_TYPE_FLOAT64 && check_bytes(&v, (size_t)nnz * sr_type_size(type), "values")))
        goto done;
    sr_matrix m = NULL;
    sr_status s;
    Py_BEGIN_ALLOW_THREADS s = sr_matrix_from_csr(ctx, &m, nrows, ncols, (sr_type)type, p.buf, c.buf,
                                                  has_values ? v.buf : NULL, where[0]);
    Py_END_ALLOW_THREADS if (s != SR_SUCCESS) raise_status(s);
    else result = wrap_matrix(context, m);
done:
    release_buffer(&p);
    release_buffer(&c);
    release_buffer(&v);
    return result;
}

/* from_coo(ctx, nrows, ncols, type, rows int64, cols int32, values or None, sum_duplicates) */
static PyObject *from_coo(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *values, *rows, *cols, *result = NULL;
    long long nrows, ncols;
    int type, sum = 0;
    Py_buffer r = {0}, c = {0}, v = {0};
    if (!PyArg_ParseTuple(args, "OLLiOOOp", &context, &nrows, &ncols, &type, &rows, &cols, &values, &sum))
        return NULL;
    sr_context ctx = ctx_of(context);
    int has_values = values != Py_None;
    sr_location where[3] = {SR_HOST, SR_HOST, SR_HOST};
    if (!ctx || get_array(rows, &r, 0, PyBUF_C_CONTIGUOUS, &where[0]) ||
        get_array(cols, &c, 0, PyBUF_C_CONTIGUOUS, &where[1]) ||
        (has_values && get_array(values, &v, 0, PyBUF_C_CONTIGUOUS, &where[2])) ||
        same_place(where, has_values ? 3 : 2, "from_coo"))
        goto done;
    const int64_t nnz = r.len / 8;
    if (check_bytes(&c, (size_t)nnz * 4, "cols") ||
        (has_values && type >= 0 && type <= SR_TYPE_FLOAT64 && check_bytes(&v, (size_t)nnz * sr_type_size(type), "values")))
        goto done;
    sr_matrix m = NULL;
    sr_status s;
    Py_BEGIN_ALLOW_THREADS s = sr_matrix_from_coo(ctx, &m, nrows, ncols, (sr_type)type, nnz, r.buf, c.buf,
                                                  has_values ? v.buf : NULL,
                                                  sum ? SR_DUPLICATES_SUM : SR_DUPLICATES_ERROR, where[0]);
    Py_END_ALLOW_THREADS if (s != SR_SUCCESS) raise_status(s);
    else result = wrap_matrix(context, m);
done:
    release_buffer(&r);
    release_buffer(&c);
    release_buffer(&v);
    return result;
}

/* from_dense(ctx, buffer, nrows, ncols, type, layout) */
static PyObject *from_dense(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *array, *result = NULL;
    Py_buffer b;
    long long nrows, ncols;
    int type, layout;
    if (!PyArg_ParseTuple(args, "OOLLii", &context, &array, &nrows, &ncols, &type, &layout))
        return NULL;
    sr_location where;
    if (get_array(array, &b, 0, PyBUF_ANY_CONTIGUOUS, &where))
        return NULL;
    sr_context ctx = ctx_of(context);
    if (ctx && nrows >= 0 && ncols >= 0 && type >= 0 && type <= SR_TYPE_FLOAT64 &&
        !check_bytes(&b, (size_t)(nrows * ncols) * sr_type_size(type), "the dense array")) {
        sr_dense d = sr_dense_view(b.buf, nrows, ncols, (sr_type)type, (sr_layout)layout, where);
        sr_matrix m = NULL;
        sr_status s;
        Py_BEGIN_ALLOW_THREADS s = sr_matrix_from_dense(ctx, &m, &d);
        Py_END_ALLOW_THREADS if (s != SR_SUCCESS) raise_status(s);
        else result = wrap_matrix(context, m);
    } else if (ctx && !PyErr_Occurred()) {
        PyErr_SetString(PyExc_ValueError, "from_dense: negative shape or unknown type");
    }
    release_buffer(&b);
    return result;
}

static PyObject *read_mm(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context;
    const char *path;
    int type = -1;
    if (!PyArg_ParseTuple(args, "Os|i", &context, &path, &type))
        return NULL;
    sr_context ctx = ctx_of(context);
    if (!ctx)
        return NULL;
    sr_matrix m = NULL;
    TRY(sr_matrix_read_mm(ctx, path, type, &m, NULL));
    return wrap_matrix(context, m);
}

/* ------------------------------------------------------------------ products */

/* A dense operand: (buffer, nrows, ncols, type, layout), host. */
typedef struct {
    Py_buffer buf;
    sr_dense view;
} dense_arg;

static int dense_parse(PyObject *tuple, dense_arg *d, int writable, const char *what)
{
    PyObject *obj;
    long long nrows, ncols;
    int type, layout;
    d->buf.obj = NULL;
    if (!PyArg_ParseTuple(tuple, "OLLii", &obj, &nrows, &ncols, &type, &layout))
        return -1;
    if (type < 0 || type > SR_TYPE_FLOAT64 || nrows < 0 || ncols < 0) {
        PyErr_Format(PyExc_ValueError, "%s: negative shape or unknown type", what);
        return -1;
    }
    sr_location where;
    if (get_array(obj, &d->buf, writable, PyBUF_ANY_CONTIGUOUS, &where))
        return -1;
    if (check_bytes(&d->buf, (size_t)(nrows * ncols) * sr_type_size((sr_type)type), what)) {
        release_buffer(&d->buf);
        d->buf.obj = NULL;
        return -1;
    }
    d->view = sr_dense_view(d->buf.buf, nrows, ncols, (sr_type)type, (sr_layout)layout, where);
    return 0;
}

static void dense_release(dense_arg *d)
{
    if (d->buf.obj)
        PyBuffer_Release(&d->buf);
}

/* spmv(ctx, y, A, x, semiring, mask, accumulate, complement), y and x dense tuples */
static PyObject *spmv_or_spmm(PyObject *args, int matrix_b)
{
    PyObject *context, *yt, *a, *xt, *mask_obj;
    int semiring, accumulate, complement;
    if (!PyArg_ParseTuple(args, "OO!OO!iOpp", &context, &PyTuple_Type, &yt, &a, &PyTuple_Type, &xt, &semiring,
                          &mask_obj, &accumulate, &complement))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix A, mask;
    if (!ctx || matrix_arg(a, &A, 0, "A") || matrix_arg(mask_obj, &mask, 1, "mask"))
        return NULL;
    dense_arg y, x;
    if (dense_parse(yt, &y, 1, "the output"))
        return NULL;
    if (dense_parse(xt, &x, 0, "the dense operand")) {
        dense_release(&y);
        return NULL;
    }
    sr_descriptor d = {.accumulate = accumulate != 0, .mask_complement = complement != 0};
    sr_status s;
    Py_BEGIN_ALLOW_THREADS s = matrix_b ? sr_spmm(ctx, &y.view, mask, (sr_semiring)semiring, A, &x.view, &d)
                                        : sr_spmv(ctx, &y.view, mask, (sr_semiring)semiring, A, &x.view, &d);
    Py_END_ALLOW_THREADS dense_release(&y);
    dense_release(&x);
    if (s != SR_SUCCESS)
        return raise_status(s);
    Py_RETURN_NONE;
}

static PyObject *spmv(PyObject *mod, PyObject *args)
{
    (void)mod;
    return spmv_or_spmm(args, 0);
}

static PyObject *spmm(PyObject *mod, PyObject *args)
{
    (void)mod;
    return spmv_or_spmm(args, 1);
}

/* An optional dense argument: None, or a (buffer, nrows, ncols, type, layout) tuple. */
static int optional_dense(PyObject *obj, dense_arg *d, int writable, const char *what, const sr_dense **view)
{
    d->buf.obj = NULL;
    *view = NULL;
    if (obj == Py_None)
        return 0;
    if (!PyTuple_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a dense tuple or None", what);
        return -1;
    }
    if (dense_parse(obj, d, writable, what))
        return -1;
    *view = &d->view;
    return 0;
}

/* sddmm(ctx, S, A, B, semiring, alpha, beta, pattern, values_or_None, precision) -> Matrix of S's
 * pattern, or None when the values go into `values` (an nnz vector: sr_sddmm_values) */
static PyObject *sddmm(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *s_obj, *at, *bt, *values_obj;
    int semiring, pattern, precision = SR_PRECISION_EXACT;
    double alpha, beta;
    if (!PyArg_ParseTuple(args, "OOO!O!iddpO|i", &context, &s_obj, &PyTuple_Type, &at, &PyTuple_Type, &bt, &semiring,
                          &alpha, &beta, &pattern, &values_obj, &precision))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix S, C = NULL;
    if (!ctx || matrix_arg(s_obj, &S, 0, "S"))
        return NULL;
    dense_arg a, b, values;
    const sr_dense *values_view = NULL;
    if (dense_parse(at, &a, 0, "A"))
        return NULL;
    if (dense_parse(bt, &b, 0, "B") || optional_dense(values_obj, &values, 1, "values", &values_view)) {
        dense_release(&a);
        if (b.buf.obj)
            dense_release(&b);
        return NULL;
    }
    sr_descriptor d = {.sample_pattern = pattern != 0, .precision = (sr_precision)precision};
    sr_status st;
    Py_BEGIN_ALLOW_THREADS st = values_view ? sr_sddmm_values(ctx, values_view, (sr_semiring)semiring, alpha, S, &a.view,
                                                              &b.view, beta, &d)
                                            : sr_sddmm(ctx, &C, (sr_semiring)semiring, alpha, S, &a.view, &b.view, beta,
                                                       &d);
    Py_END_ALLOW_THREADS dense_release(&a);
    dense_release(&b);
    dense_release(&values);
    if (st != SR_SUCCESS)
        return raise_status(st);
    if (values_view)
        Py_RETURN_NONE;
    return wrap_matrix(context, C);
}

/* sddmm_spmm(ctx, O, S, A, B, V, alpha, softmax, pattern, accumulate, precision) */
static PyObject *sddmm_spmm(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *s_obj, *ot, *at, *bt, *vt;
    int softmax, pattern, accumulate, precision = SR_PRECISION_EXACT;
    double alpha;
    if (!PyArg_ParseTuple(args, "OO!OO!O!O!dppp|i", &context, &PyTuple_Type, &ot, &s_obj, &PyTuple_Type, &at,
                          &PyTuple_Type, &bt, &PyTuple_Type, &vt, &alpha, &softmax, &pattern, &accumulate, &precision))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix S;
    if (!ctx || matrix_arg(s_obj, &S, 0, "S"))
        return NULL;
    dense_arg o, a, b, v;
    if (dense_parse(ot, &o, 1, "the output"))
        return NULL;
    if (dense_parse(at, &a, 0, "A")) {
        dense_release(&o);
        return NULL;
    }
    if (dense_parse(bt, &b, 0, "B")) {
        dense_release(&o), dense_release(&a);
        return NULL;
    }
    if (dense_parse(vt, &v, 0, "V")) {
        dense_release(&o), dense_release(&a), dense_release(&b);
        return NULL;
    }
    sr_descriptor d = {.accumulate = accumulate != 0, .sample_pattern = pattern != 0,
                       .precision = (sr_precision)precision};
    sr_status st;
    Py_BEGIN_ALLOW_THREADS st = sr_sddmm_spmm(ctx, &o.view, alpha, S, &a.view, &b.view, &v.view,
                                              softmax ? SR_NORMALIZE_SOFTMAX : SR_NORMALIZE_NONE, &d);
    Py_END_ALLOW_THREADS dense_release(&o);
    dense_release(&a), dense_release(&b), dense_release(&v);
    if (st != SR_SUCCESS)
        return raise_status(st);
    Py_RETURN_NONE;
}

/* What an iterative call reports to Python: each step's tuple appended to `steps`, then
 * `callback(step)` when given (a true result stops the call). */
typedef struct {
    PyObject *steps, *callback;
    int failed; /* a Python error is pending */
} step_report;

/* Hands one step (built by `build`, under the GIL) to Python; nonzero asks the call to stop. */
static int report_step(step_report *r, PyObject *(*build)(const void *), const void *step)
{
    PyGILState_STATE g = PyGILState_Ensure();
    int stop = 0;
    PyObject *t = build(step);
    if (!t || PyList_Append(r->steps, t) != 0) {
        r->failed = 1, stop = 1;
    } else if (r->callback != Py_None) {
        PyObject *res = PyObject_CallOneArg(r->callback, t);
        if (!res)
            r->failed = 1, stop = 1;
        else
            stop = PyObject_IsTrue(res) == 1;
        Py_XDECREF(res);
    }
    Py_XDECREF(t);
    PyGILState_Release(g);
    return stop;
}

/* After the call: NULL with the Python error or the library's, else a new reference to steps
 * (a stop the callback asked for is not an error). */
static PyObject *finish_report(step_report *r, sr_status st)
{
    if (r->failed || (st != SR_SUCCESS && !(st == SR_ERROR_CANCELLED && r->callback != Py_None))) {
        Py_DECREF(r->steps);
        return r->failed ? NULL : raise_status(st);
    }
    return r->steps;
}

static PyObject *factorize_tuple(const void *p)
{
    const sr_factorize_step *step = p;
    return Py_BuildValue("(iddd)", step->iteration, step->train_rmse, step->test_rmse, step->seconds);
}

static int factorize_step(const sr_factorize_step *step, void *user)
{
    return report_step(user, factorize_tuple, step);
}

/* factorize(ctx, R, R_test_or_None, W, H, rank, lambda, iterations, cg_steps, seed, center, use_initial,
 * callback_or_None) -> (mean, [(iteration, train_rmse, test_rmse, seconds)]) */
static PyObject *factorize(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *r_obj, *t_obj, *wt, *ht, *callback;
    long long rank;
    double lambda;
    int iterations, cg_steps, center, use_initial;
    unsigned long long seed;
    if (!PyArg_ParseTuple(args, "OOOO!O!LdiiKppO", &context, &r_obj, &t_obj, &PyTuple_Type, &wt, &PyTuple_Type, &ht,
                          &rank, &lambda, &iterations, &cg_steps, &seed, &center, &use_initial, &callback))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix R, T;
    if (!ctx || matrix_arg(r_obj, &R, 0, "R") || matrix_arg(t_obj, &T, 1, "R_test"))
        return NULL;
    dense_arg w, h;
    if (dense_parse(wt, &w, 1, "W"))
        return NULL;
    if (dense_parse(ht, &h, 1, "H")) {
        dense_release(&w);
        return NULL;
    }
    step_report rep = {PyList_New(0), callback, 0};
    if (!rep.steps) {
        dense_release(&w), dense_release(&h);
        return NULL;
    }
    sr_factorize_options o = sr_factorize_options_default();
    o.rank = rank;
    o.lambda = lambda;
    o.iterations = iterations;
    o.cg_steps = cg_steps;
    o.seed = seed;
    o.center = center != 0;
    o.use_initial = use_initial != 0;
    o.report = factorize_step;
    o.report_user = &rep;
    double mean = 0;
    sr_status st;
    Py_BEGIN_ALLOW_THREADS st = sr_factorize(ctx, R, T, &o, &w.view, &h.view, &mean, NULL);
    Py_END_ALLOW_THREADS dense_release(&w);
    dense_release(&h);
    PyObject *steps = finish_report(&rep, st);
    return steps ? Py_BuildValue("(dN)", mean, steps) : NULL;
}

/* fused_pattern(ctx, form, w, alpha, X_matrix_or_None, X_dense_or_None, v_or_None, y, beta, z_or_None) */
static PyObject *fused_pattern(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *wt, *x_obj, *xd_obj, *v_obj, *yt, *z_obj;
    int form;
    double alpha, beta;
    if (!PyArg_ParseTuple(args, "OiO!dOOOO!dO", &context, &form, &PyTuple_Type, &wt, &alpha, &x_obj, &xd_obj, &v_obj,
                          &PyTuple_Type, &yt, &beta, &z_obj))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix X = NULL;
    if (!ctx || (x_obj != Py_None && matrix_arg(x_obj, &X, 0, "X")))
        return NULL;
    dense_arg w, xd, v, y, z;
    memset(&xd, 0, sizeof xd), memset(&v, 0, sizeof v), memset(&y, 0, sizeof y), memset(&z, 0, sizeof z);
    const sr_dense *xdv = NULL, *vv = NULL, *zv = NULL;
    if (dense_parse(wt, &w, 1, "w"))
        return NULL;
    if (optional_dense(xd_obj, &xd, 0, "X", &xdv) || optional_dense(v_obj, &v, 0, "v", &vv) ||
        dense_parse(yt, &y, 0, "y") || optional_dense(z_obj, &z, 0, "z", &zv)) {
        dense_release(&w), dense_release(&xd), dense_release(&v), dense_release(&y), dense_release(&z);
        return NULL;
    }
    sr_status st;
    Py_BEGIN_ALLOW_THREADS st = X ? sr_fused_pattern(ctx, (sr_pattern_form)form, &w.view, alpha, X, vv, &y.view, beta, zv)
                                  : sr_fused_pattern_dense(ctx, (sr_pattern_form)form, &w.view, alpha, xdv, vv,
                                                           &y.view, beta, zv);
    Py_END_ALLOW_THREADS dense_release(&w);
    dense_release(&xd), dense_release(&v), dense_release(&y), dense_release(&z);
    if (st != SR_SUCCESS)
        return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *solver_tuple(const void *p)
{
    const sr_solver_step *step = p;
    return Py_BuildValue("(iidddd)", step->iteration, step->inner, step->loss, step->gradient_norm, step->seconds,
                         step->intercept);
}

static int solver_step(const sr_solver_step *step, void *user)
{
    return report_step(user, solver_tuple, step);
}

/* solve(ctx, kind (0 ridge, 1 logistic), X, y, w, lambda_or_C, tolerance, max_iterations, fit_intercept,
 * callback, preconditioner (sr_preconditioner)) -> (intercept, steps) */
static PyObject *solve(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *x_obj, *yt, *wt, *callback;
    int kind, max_iterations, fit_intercept, preconditioner;
    double param, tolerance;
    if (!PyArg_ParseTuple(args, "OiOO!O!ddipOi", &context, &kind, &x_obj, &PyTuple_Type, &yt, &PyTuple_Type, &wt,
                          &param, &tolerance, &max_iterations, &fit_intercept, &callback, &preconditioner))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix X;
    if (!ctx || matrix_arg(x_obj, &X, 0, "X"))
        return NULL;
    dense_arg y, w;
    if (dense_parse(yt, &y, 0, "y"))
        return NULL;
    if (dense_parse(wt, &w, 1, "w")) {
        dense_release(&y);
        return NULL;
    }
    step_report rep = {PyList_New(0), callback, 0};
    if (!rep.steps) {
        dense_release(&y), dense_release(&w);
        return NULL;
    }
    sr_solver_options o = sr_solver_options_default();
    o.tolerance = tolerance;
    o.max_iterations = max_iterations;
    o.fit_intercept = fit_intercept != 0;
    o.preconditioner = (sr_preconditioner)preconditioner;
    o.report = solver_step;
    o.report_user = &rep;
    sr_solver_step last = {0, 0, 0, 0, 0, 0};
    sr_status st;
    Py_BEGIN_ALLOW_THREADS st = kind == 0 ? sr_ridge(ctx, X, &y.view, param, &o, &w.view, &last)
                                          : sr_logistic(ctx, X, &y.view, param, &o, &w.view, &last);
    Py_END_ALLOW_THREADS dense_release(&y);
    dense_release(&w);
    PyObject *steps = finish_report(&rep, st);
    return steps ? Py_BuildValue("(dN)", last.intercept, steps) : NULL;
}

/* binary(ctx, op, A, B, semiring, mask, C_or_None (accumulate into it), complement, transpose_b) -> Matrix;
 * op 0 mxm, 1 ewise_add, 2 ewise_mult, 3 kronecker. */
static PyObject *binary(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *a, *b, *mask_obj, *c_obj;
    int op, semiring, complement, transpose_b;
    if (!PyArg_ParseTuple(args, "OiOOiOOpp", &context, &op, &a, &b, &semiring, &mask_obj, &c_obj, &complement,
                          &transpose_b))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix A, B, mask, old;
    if (!ctx || matrix_arg(a, &A, 0, "A") || matrix_arg(b, &B, 0, "B") || matrix_arg(mask_obj, &mask, 1, "mask") ||
        matrix_arg(c_obj, &old, 1, "C"))
        return NULL;
    if (op < 0 || op > 3) {
        PyErr_Format(PyExc_ValueError, "unknown operation %d", op);
        return NULL;
    }
    sr_matrix C = NULL;
    if (old) /* accumulate: the library replaces its argument, so give it a copy to consume */
        TRY(sr_matrix_dup(ctx, old, &C));
    sr_descriptor d = {.accumulate = old != NULL, .mask_complement = complement != 0, .transpose_b = transpose_b != 0};
    sr_status s;
    Py_BEGIN_ALLOW_THREADS switch (op) {
    case 0: s = sr_mxm(ctx, &C, mask, (sr_semiring)semiring, A, B, &d); break;
    case 1: s = sr_ewise_add(ctx, &C, mask, (sr_semiring)semiring, A, B, &d); break;
    case 2: s = sr_ewise_mult(ctx, &C, mask, (sr_semiring)semiring, A, B, &d); break;
    default: s = sr_kronecker(ctx, &C, mask, (sr_semiring)semiring, A, B, &d); break;
    }
    Py_END_ALLOW_THREADS if (s != SR_SUCCESS)
    {
        sr_matrix_free(old ? C : NULL);
        return raise_status(s);
    }
    return wrap_matrix(context, C);
}

/* ------------------------------------------------------------------ row blocks (sr_mxm_row_blocks) */

static const char *kRowBlocks = "sparsering.row_blocks";

static void row_blocks_destroy(PyObject *capsule) { sr_row_blocks_free(PyCapsule_GetPointer(capsule, kRowBlocks)); }

/* mxm_row_blocks(ctx, A, B, semiring) -> a capsule owning the blocks */
static PyObject *mxm_row_blocks(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *a, *b;
    int semiring;
    if (!PyArg_ParseTuple(args, "OOOi", &context, &a, &b, &semiring))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix A, B;
    if (!ctx || matrix_arg(a, &A, 0, "A") || matrix_arg(b, &B, 0, "B"))
        return NULL;
    sr_row_blocks R = NULL;
    TRY(sr_mxm_row_blocks(ctx, &R, (sr_semiring)semiring, A, B));
    PyObject *capsule = PyCapsule_New(R, kRowBlocks, row_blocks_destroy);
    if (!capsule)
        sr_row_blocks_free(R);
    return capsule;
}

/* row_blocks_info(capsule) -> [(first_row, nrows, ncols, nnz, type, location, device), ...] */
static PyObject *row_blocks_info(PyObject *mod, PyObject *capsule)
{
    (void)mod;
    sr_row_blocks R = PyCapsule_GetPointer(capsule, kRowBlocks);
    if (!R)
        return NULL;
    PyObject *out = PyList_New(sr_row_blocks_count(R));
    for (int g = 0; out && g < sr_row_blocks_count(R); g++) {
        sr_matrix block;
        int64_t first;
        sr_matrix_info i;
        if (sr_row_blocks_get(R, g, &block, &first) != SR_SUCCESS || info_of(block, &i)) {
            Py_DECREF(out);
            return PyErr_Occurred() ? NULL : raise_status(SR_ERROR_INTERNAL);
        }
        PyList_SET_ITEM(out, g, Py_BuildValue("(LLLLiii)", (long long)first, (long long)i.nrows, (long long)i.ncols,
                                              (long long)i.nnz, (int)i.type, (int)i.location, i.device));
    }
    return out;
}

/* row_blocks_export_csr(capsule, g, indptr, indices, values or None): block g into host (or its
 * GPU's) arrays, through its own GPU's context */
static PyObject *row_blocks_export_csr(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *capsule, *indptr, *indices, *values;
    int g;
    if (!PyArg_ParseTuple(args, "OiOOO", &capsule, &g, &indptr, &indices, &values))
        return NULL;
    sr_row_blocks R = PyCapsule_GetPointer(capsule, kRowBlocks);
    if (!R)
        return NULL;
    sr_matrix block;
    TRY(sr_row_blocks_get(R, g, &block, NULL));
    return export_csr_into(sr_row_blocks_context(R, g), block, indptr, indices, values);
}

/* row_blocks_gather(ctx, capsule) -> Matrix (where sr_mxm would have put the product) */
static PyObject *row_blocks_gather(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *capsule;
    if (!PyArg_ParseTuple(args, "OO", &context, &capsule))
        return NULL;
    sr_row_blocks R = PyCapsule_GetPointer(capsule, kRowBlocks);
    if (!R || !ctx_of(context))
        return NULL;
    sr_matrix C = NULL;
    TRY(sr_row_blocks_gather(R, &C));
    return wrap_matrix(context, C);
}

/* extract(ctx, A, row0, col0, nrows, ncols) -> Matrix */
static PyObject *extract(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *a;
    long long r0, c0, nr, nc;
    if (!PyArg_ParseTuple(args, "OOLLLL", &context, &a, &r0, &c0, &nr, &nc))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix A, C = NULL;
    if (!ctx || matrix_arg(a, &A, 0, "A"))
        return NULL;
    TRY(sr_extract(ctx, &C, A, r0, c0, nr, nc));
    return wrap_matrix(context, C);
}

/* reduce_rows(ctx, A, semiring) -> Matrix (nrows x 1) */
/* spmv_plan(ctx, A, drop) -> (in_use, hot_columns, hot_share, seconds, plain_seconds, planned_seconds, bytes);
 * drop: sr_spmv_plan_free instead (returns None). */
static PyObject *spmv_plan(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *a;
    int drop;
    if (!PyArg_ParseTuple(args, "OOp", &context, &a, &drop))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix A;
    if (!ctx || matrix_arg(a, &A, 0, "A"))
        return NULL;
    if (drop) {
        TRY(sr_spmv_plan_free(ctx, A));
        Py_RETURN_NONE;
    }
    sr_spmv_plan_info i;
    sr_status st;
    Py_BEGIN_ALLOW_THREADS st = sr_spmv_plan(ctx, A, &i);
    Py_END_ALLOW_THREADS if (st != SR_SUCCESS) return raise_status(st);
    return Py_BuildValue("(OLddddK)", i.in_use ? Py_True : Py_False, (long long)i.hot_columns, i.hot_share, i.seconds,
                         i.plain_seconds, i.planned_seconds, (unsigned long long)i.bytes);
}

/* pagerank(ctx, A, rank (dense tuple, written), damping, tolerance, max_iterations, plan)
 * -> (iterations, change, setup_s, plan_s, iterate_s, plan info tuple) */
static PyObject *pagerank(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *a, *rt;
    double damping, tolerance;
    int max_iterations, plan;
    if (!PyArg_ParseTuple(args, "OOO!ddip", &context, &a, &PyTuple_Type, &rt, &damping, &tolerance, &max_iterations,
                          &plan))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix A;
    if (!ctx || matrix_arg(a, &A, 0, "A"))
        return NULL;
    dense_arg r;
    if (dense_parse(rt, &r, 1, "rank"))
        return NULL;
    sr_pagerank_options o = {damping, tolerance, max_iterations, plan != 0};
    sr_pagerank_result res;
    sr_status st;
    Py_BEGIN_ALLOW_THREADS st = sr_pagerank(ctx, A, &o, &r.view, &res);
    Py_END_ALLOW_THREADS dense_release(&r);
    if (st != SR_SUCCESS)
        return raise_status(st);
    const sr_spmv_plan_info *i = &res.plan;
    return Py_BuildValue("(idddd(OLddddK))", res.iterations, res.change, res.setup_seconds, res.plan_seconds,
                         res.iterate_seconds, i->in_use ? Py_True : Py_False, (long long)i->hot_columns, i->hot_share,
                         i->seconds, i->plain_seconds, i->planned_seconds, (unsigned long long)i->bytes);
}

static PyObject *reduce_rows(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *a;
    int semiring;
    if (!PyArg_ParseTuple(args, "OOi", &context, &a, &semiring))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix A, v = NULL;
    if (!ctx || matrix_arg(a, &A, 0, "A"))
        return NULL;
    TRY(sr_reduce_rows(ctx, &v, (sr_semiring)semiring, A));
    return wrap_matrix(context, v);
}

/* A bit block over a C-contiguous uint64 buffer of nrows x words (ld = words): a host buffer, or
 * a device array as get_array's (pointer, bytes) tuple. Release with release_buffer. */
static int bits_arg(PyObject *obj, Py_buffer *b, long long nrows, long long ncols, int writable, sr_bits *out,
                    const char *what)
{
    sr_location where;
    if (get_array(obj, b, writable, PyBUF_C_CONTIGUOUS, &where))
        return -1;
    *out = sr_bits_view(b->buf, nrows, ncols, where);
    if (nrows < 0 || ncols < 0 || check_bytes(b, (size_t)(nrows * out->ld) * 8, what)) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "%s: negative shape", what);
        release_buffer(b);
        b->obj = NULL;
        return -1;
    }
    return 0;
}

/* mxm_bits(ctx, Y, mask_or_None, A, X, ncols, complement, replace, accumulate) -> bits set in Y */
static PyObject *mxm_bits(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *y_obj, *mask_obj, *a, *x_obj;
    long long ncols;
    int complement, replace, accumulate;
    if (!PyArg_ParseTuple(args, "OOOOOLppp", &context, &y_obj, &mask_obj, &a, &x_obj, &ncols, &complement, &replace,
                          &accumulate))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix A;
    if (!ctx || matrix_arg(a, &A, 0, "A"))
        return NULL;
    sr_matrix_info info;
    if (info_of(A, &info))
        return NULL;
    Py_buffer yb, xb, mb = {0};
    sr_bits Y, X, M;
    if (bits_arg(y_obj, &yb, info.nrows, ncols, 1, &Y, "Y"))
        return NULL;
    if (bits_arg(x_obj, &xb, info.ncols, ncols, 0, &X, "X")) {
        release_buffer(&yb);
        return NULL;
    }
    if (mask_obj != Py_None && bits_arg(mask_obj, &mb, info.nrows, ncols, 0, &M, "mask")) {
        release_buffer(&yb);
        release_buffer(&xb);
        return NULL;
    }
    sr_descriptor d = {.accumulate = accumulate != 0, .mask_complement = complement != 0, .replace = replace != 0};
    int64_t count = 0;
    sr_status s;
    Py_BEGIN_ALLOW_THREADS s = sr_mxm_bits(ctx, &Y, mask_obj != Py_None ? &M : NULL, A, &X, &d, &count);
    Py_END_ALLOW_THREADS release_buffer(&yb);
    release_buffer(&xb);
    release_buffer(&mb);
    if (s != SR_SUCCESS)
        return raise_status(s);
    return PyLong_FromLongLong(count);
}

/* read_labeled_graph(ctx, path, nvertices) -> ([(label, Matrix)], nvertices); host matrices */
static PyObject *read_labeled_graph(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context;
    const char *path;
    long long nvertices;
    if (!PyArg_ParseTuple(args, "OsL", &context, &path, &nvertices))
        return NULL;
    sr_context ctx = ctx_of(context);
    if (!ctx)
        return NULL;
    int64_t n = nvertices, nlabels = 0;
    char **labels = NULL;
    sr_matrix *graphs = NULL;
    TRY(sr_labeled_graph_read(ctx, path, SR_HOST, &n, &nlabels, &labels, &graphs));
    PyObject *list = PyList_New(0);
    for (int64_t l = 0; list && l < nlabels; l++) {
        PyObject *m = wrap_matrix(context, graphs[l]);
        graphs[l] = NULL; /* owned by m now (or freed by wrap_matrix) */
        PyObject *pair = m ? Py_BuildValue("(sN)", labels[l], m) : NULL;
        if (!pair || PyList_Append(list, pair) != 0) {
            Py_XDECREF(pair);
            Py_CLEAR(list);
        } else {
            Py_DECREF(pair);
        }
    }
    sr_labels_free(nlabels, labels, graphs);
    return list ? Py_BuildValue("(NL)", list, (long long)n) : NULL;
}

/* bits_from_matrix(ctx, A, out words (nrows x words, C-contiguous uint64)) */
static PyObject *bits_from_matrix(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *a, *out;
    if (!PyArg_ParseTuple(args, "OOO", &context, &a, &out))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix A;
    sr_matrix_info info;
    if (!ctx || matrix_arg(a, &A, 0, "A") || info_of(A, &info))
        return NULL;
    Py_buffer b;
    sr_bits X;
    if (bits_arg(out, &b, info.nrows, info.ncols, 1, &X, "out"))
        return NULL;
    sr_status s;
    Py_BEGIN_ALLOW_THREADS s = sr_bits_from_matrix(ctx, &X, A);
    Py_END_ALLOW_THREADS release_buffer(&b);
    if (s != SR_SUCCESS)
        return raise_status(s);
    Py_RETURN_NONE;
}

/* matrix_from_bits(ctx, words, nrows, ncols) -> Matrix (bool, host) */
static PyObject *matrix_from_bits(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *words;
    long long nrows, ncols;
    if (!PyArg_ParseTuple(args, "OOLL", &context, &words, &nrows, &ncols))
        return NULL;
    sr_context ctx = ctx_of(context);
    if (!ctx)
        return NULL;
    Py_buffer b;
    sr_bits X;
    if (bits_arg(words, &b, nrows, ncols, 0, &X, "words"))
        return NULL;
    sr_matrix A = NULL;
    sr_status s;
    Py_BEGIN_ALLOW_THREADS s = sr_matrix_from_bits(ctx, &A, &X);
    Py_END_ALLOW_THREADS release_buffer(&b);
    if (s != SR_SUCCESS)
        return raise_status(s);
    return wrap_matrix(context, A);
}

/* bits_or(ctx, Y, X_or_None, nrows, ncols) -> bits set in Y after Y |= X (X None: a count only) */
static PyObject *bits_or(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *y_obj, *x_obj;
    long long nrows, ncols;
    if (!PyArg_ParseTuple(args, "OOOLL", &context, &y_obj, &x_obj, &nrows, &ncols))
        return NULL;
    sr_context ctx = ctx_of(context);
    if (!ctx)
        return NULL;
    Py_buffer yb, xb = {0};
    sr_bits Y, X;
    if (bits_arg(y_obj, &yb, nrows, ncols, x_obj != Py_None, &Y, "Y"))
        return NULL;
    if (x_obj != Py_None && bits_arg(x_obj, &xb, nrows, ncols, 0, &X, "X")) {
        release_buffer(&yb);
        return NULL;
    }
    int64_t count = 0;
    sr_status s;
    Py_BEGIN_ALLOW_THREADS s = x_obj != Py_None ? sr_bits_or(ctx, &Y, &X, &count) : sr_bits_count(ctx, &Y, &count);
    Py_END_ALLOW_THREADS release_buffer(&yb);
    release_buffer(&xb);
    if (s != SR_SUCCESS)
        return raise_status(s);
    return PyLong_FromLongLong(count);
}

static PyObject *query_result(PyObject *context, sr_matrix R, const sr_query_stats *st)
{
    PyObject *m = wrap_matrix(context, R);
    if (!m)
        return NULL;
    return Py_BuildValue("(NLLd)", m, (long long)st->rounds, (long long)st->products, st->seconds);
}

/* closure(ctx, A, method) -> (Matrix, rounds, products, seconds) */
static PyObject *closure(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *a;
    int method;
    if (!PyArg_ParseTuple(args, "OOi", &context, &a, &method))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix A, C = NULL;
    if (!ctx || matrix_arg(a, &A, 0, "A"))
        return NULL;
    sr_query_stats st = {0, 0, 0};
    TRY(sr_transitive_closure(ctx, A, (sr_closure_method)method, &C, NULL, &st));
    return query_result(context, C, &st);
}

/* reachability(ctx, A, sources int64 buffer) -> (Matrix, rounds, products, seconds) */
static PyObject *reachability(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *a, *src;
    if (!PyArg_ParseTuple(args, "OOO", &context, &a, &src))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix A, R = NULL;
    if (!ctx || matrix_arg(a, &A, 0, "A"))
        return NULL;
    Py_buffer b;
    if (PyObject_GetBuffer(src, &b, PyBUF_C_CONTIGUOUS) != 0)
        return NULL;
    sr_query_stats st = {0, 0, 0};
    sr_status s;
    Py_BEGIN_ALLOW_THREADS s = sr_reachability(ctx, A, (int64_t)(b.len / 8), (const int64_t *)b.buf, &R, NULL, &st);
    Py_END_ALLOW_THREADS PyBuffer_Release(&b);
    if (s != SR_SUCCESS)
        return raise_status(s);
    return query_result(context, R, &st);
}

/* cfpq(ctx, grammar, grammar_is_path, [label names], [Matrix], symbol_or_None) -> (Matrix, rounds, products,
 * seconds); grammar is the text, or a file's path (read by sr_grammar_read) */
static PyObject *cfpq(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *names, *mats, *symbol_obj;
    const char *text;
    int is_path, allow_missing = 0;
    if (!PyArg_ParseTuple(args, "OspO!O!O|p", &context, &text, &is_path, &PyList_Type, &names, &PyList_Type, &mats,
                          &symbol_obj, &allow_missing))
        return NULL;
    sr_context ctx = ctx_of(context);
    if (!ctx)
        return NULL;
    const Py_ssize_t n = PyList_GET_SIZE(names);
    if (PyList_GET_SIZE(mats) != n) {
        PyErr_SetString(PyExc_ValueError, "cfpq: as many graphs as labels");
        return NULL;
    }
    const char *symbol = symbol_obj == Py_None ? NULL : PyUnicode_AsUTF8(symbol_obj);
    if (symbol_obj != Py_None && !symbol)
        return NULL;
    const char **labels = PyMem_Calloc((size_t)n + 1, sizeof *labels);
    sr_matrix *graphs = PyMem_Calloc((size_t)n + 1, sizeof *graphs);
    if (!labels || !graphs) {
        PyMem_Free(labels);
        PyMem_Free(graphs);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t l = 0; l < n; l++)
        if (!(labels[l] = PyUnicode_AsUTF8(PyList_GET_ITEM(names, l))) ||
            matrix_arg(PyList_GET_ITEM(mats, l), &graphs[l], 0, "a label's graph")) {
            PyMem_Free(labels);
            PyMem_Free(graphs);
            return NULL;
        }
    sr_grammar g = NULL;
    sr_matrix R = NULL;
    sr_query_stats st = {0, 0, 0};
    const sr_query_options qo = {NULL, NULL, allow_missing != 0};
    sr_status s;
    Py_BEGIN_ALLOW_THREADS s = is_path ? sr_grammar_read(text, &g) : sr_grammar_parse(text, &g);
    if (s == SR_SUCCESS)
        s = sr_cfpq(ctx, g, (int64_t)n, labels, graphs, symbol, &R, &qo, &st);
    sr_grammar_free(g);
    Py_END_ALLOW_THREADS PyMem_Free(labels);
    PyMem_Free(graphs);
    if (s != SR_SUCCESS)
        return raise_status(s);
    return query_result(context, R, &st);
}

static PyObject *semiring_output_type(PyObject *mod, PyObject *args)
{
    (void)mod;
    int s, t;
    if (!PyArg_ParseTuple(args, "ii", &s, &t))
        return NULL;
    sr_type out;
    sr_status st = sr_semiring_output_type((sr_semiring)s, (sr_type)t, &out);
    if (st != SR_SUCCESS)
        return raise_status(st);
    return PyLong_FromLong((long)out);
}

/* semiring_define(name, type, add, identity_or_None, multiply) -> the semiring's id (compiled now) */
static PyObject *semiring_define(PyObject *mod, PyObject *args)
{
    (void)mod;
    const char *name, *add, *identity, *multiply;
    int type;
    if (!PyArg_ParseTuple(args, "siszs", &name, &type, &add, &identity, &multiply))
        return NULL;
    sr_semiring_def d = {name, (sr_type)type, add, identity, multiply};
    sr_semiring out = SR_PLUS_TIMES;
    sr_status st;
    Py_BEGIN_ALLOW_THREADS st = sr_semiring_define(&d, &out);
    Py_END_ALLOW_THREADS
    if (st != SR_SUCCESS)
        return raise_status(st);
    return PyLong_FromLong((long)out);
}

/* metric_define(name, pair, norm, distance, over_union, similarity, pair2, norm2, reduce) -> the metric's id
 * (the optional strings None) */
static PyObject *metric_define(PyObject *mod, PyObject *args)
{
    (void)mod;
    const char *name, *pair, *norm, *distance, *pair2, *norm2, *reduce;
    int over_union, similarity;
    if (!PyArg_ParseTuple(args, "sszzppzzz", &name, &pair, &norm, &distance, &over_union, &similarity, &pair2, &norm2,
                          &reduce))
        return NULL;
    sr_metric_def d = {name, pair, norm, distance, over_union != 0, similarity != 0, pair2, norm2, reduce};
    sr_metric out = SR_METRIC_L2;
    sr_status st;
    Py_BEGIN_ALLOW_THREADS st = sr_metric_define(&d, &out);
    Py_END_ALLOW_THREADS
    if (st != SR_SUCCESS)
        return raise_status(st);
    return PyLong_FromLong((long)out);
}

/* The names the library gives ids 0..count-1 (semirings or metrics), as a tuple. */
static PyObject *names(const char *(*name_of)(int), int count)
{
    PyObject *t = PyTuple_New(count);
    for (int i = 0; t && i < count; i++) {
        PyObject *n = PyUnicode_FromString(name_of(i));
        if (!n) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, n);
    }
    return t;
}

static const char *semiring_name_of(int i) { return sr_semiring_name((sr_semiring)i); }
static const char *metric_name_of(int i) { return sr_metric_name((sr_metric)i); }

/* ------------------------------------------------------------------ distances and k-NN */

static PyObject *metric_from_name(PyObject *mod, PyObject *arg)
{
    (void)mod;
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name)
        return NULL;
    sr_metric m;
    sr_status s = sr_metric_from_name(name, &m);
    if (s != SR_SUCCESS)
        return raise_status(s);
    return PyLong_FromLong((long)m);
}

/* pairwise(ctx, A, B, metric, arg, D dense tuple) */
static PyObject *pairwise(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *a, *b, *dt;
    int metric;
    double arg;
    if (!PyArg_ParseTuple(args, "OOOidO!", &context, &a, &b, &metric, &arg, &PyTuple_Type, &dt))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix A, B;
    if (!ctx || matrix_arg(a, &A, 0, "X") || matrix_arg(b, &B, 0, "Y"))
        return NULL;
    dense_arg D;
    if (dense_parse(dt, &D, 1, "the distances"))
        return NULL;
    sr_status s;
    Py_BEGIN_ALLOW_THREADS s = sr_pairwise_distance(ctx, A, B, (sr_metric)metric, arg, &D.view);
    Py_END_ALLOW_THREADS dense_release(&D);
    if (s != SR_SUCCESS)
        return raise_status(s);
    Py_RETURN_NONE;
}

/* The progress callback runs on the calling thread between batches: it takes the GIL, lets
 * Ctrl-C stop the call, and asks the Python callable (a true result stops too). */
typedef struct {
    PyObject *callable;
    int python_error;
} progress_state;

static int progress_trampoline(int64_t done, int64_t total, void *user)
{
    progress_state *st = user;
    PyGILState_STATE g = PyGILState_Ensure();
    int stop = 0;
    if (PyErr_CheckSignals() != 0) {
        st->python_error = 1;
        stop = 1;
    } else if (st->callable != Py_None) {
        PyObject *r = PyObject_CallFunction(st->callable, "LL", (long long)done, (long long)total);
        if (!r) {
            st->python_error = 1;
            stop = 1;
        } else {
            stop = PyObject_IsTrue(r) > 0;
            Py_DECREF(r);
        }
    }
    PyGILState_Release(g);
    return stop;
}

/* knn(ctx, index, queries, k, metric, arg, indices int64 buffer, distances dense tuple, progress, precision) */
static PyObject *knn(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *x, *q, *dt, *progress;
    long long k;
    int metric, precision = SR_PRECISION_EXACT;
    double arg;
    PyObject *indices;
    Py_buffer idx;
    sr_location idx_where;
    if (!PyArg_ParseTuple(args, "OOOLidOO!O|i", &context, &x, &q, &k, &metric, &arg, &indices, &PyTuple_Type, &dt,
                          &progress, &precision) ||
        get_array(indices, &idx, 1, PyBUF_C_CONTIGUOUS, &idx_where))
        return NULL;
    PyObject *result = NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix X, Q;
    dense_arg D = {0};
    sr_matrix_info qi;
    if (!ctx || matrix_arg(x, &X, 0, "the index") || matrix_arg(q, &Q, 0, "the queries") || info_of(Q, &qi) ||
        k < 0 || check_bytes(&idx, (size_t)(qi.nrows * k) * 8, "indices") ||
        dense_parse(dt, &D, 1, "the distances"))
        goto done;
    if (idx_where != D.view.location) {
        PyErr_SetString(PyExc_ValueError, "knn: indices and distances must both be host or both device arrays");
        goto done;
    }
    progress_state st = {progress, 0};
    sr_knn_options o = {progress_trampoline, &st, (sr_precision)precision};
    sr_status s;
    Py_BEGIN_ALLOW_THREADS s = sr_knn(ctx, X, Q, k, (sr_metric)metric, arg, idx.buf, &D.view, &o);
    Py_END_ALLOW_THREADS if (st.python_error) goto done; /* the callback's exception (or KeyboardInterrupt) */
    if (s != SR_SUCCESS)
        raise_status(s);
    else {
        Py_INCREF(Py_None);
        result = Py_None;
    }
done:
    dense_release(&D);
    release_buffer(&idx);
    return result;
}

/* knn_graph(ctx, X, k, metric, arg, distance_mode, include_self, symmetrize, type, progress, precision) -> Matrix */
static PyObject *knn_graph(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *x, *progress;
    long long k;
    int metric, distance, include_self, symmetrize, type, precision = SR_PRECISION_EXACT;
    double arg;
    if (!PyArg_ParseTuple(args, "OOLidpppiO|i", &context, &x, &k, &metric, &arg, &distance, &include_self, &symmetrize,
                          &type, &progress, &precision))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix X;
    if (!ctx || matrix_arg(x, &X, 0, "X"))
        return NULL;
    progress_state st = {progress, 0};
    sr_knn_graph_options o = sr_knn_graph_options_default();
    o.mode = distance ? SR_GRAPH_DISTANCE : SR_GRAPH_CONNECTIVITY;
    o.include_self = include_self != 0;
    o.symmetrize = symmetrize != 0;
    o.type = (sr_type)type;
    o.progress = progress_trampoline;
    o.progress_user = &st;
    o.precision = (sr_precision)precision;
    sr_matrix G = NULL;
    sr_status s;
    Py_BEGIN_ALLOW_THREADS s = sr_knn_graph(ctx, X, k, (sr_metric)metric, arg, &o, &G);
    Py_END_ALLOW_THREADS if (st.python_error) return NULL;
    if (s != SR_SUCCESS)
        return raise_status(s);
    return wrap_matrix(context, G);
}

/* radius(ctx, X, Q or None, radius, metric, arg, distance_mode, include_self, type, progress) -> Matrix */
static PyObject *radius(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *context, *x, *q, *progress;
    double r, arg;
    int metric, distance, include_self, type;
    if (!PyArg_ParseTuple(args, "OOOdidppiO", &context, &x, &q, &r, &metric, &arg, &distance, &include_self, &type,
                          &progress))
        return NULL;
    sr_context ctx = ctx_of(context);
    sr_matrix X, Q = NULL;
    if (!ctx || matrix_arg(x, &X, 0, "X") || (q != Py_None && matrix_arg(q, &Q, 0, "queries")))
        return NULL;
    progress_state st = {progress, 0};
    sr_radius_options o = sr_radius_options_default();
    o.mode = distance ? SR_GRAPH_DISTANCE : SR_GRAPH_CONNECTIVITY;
    o.include_self = include_self != 0;
    o.type = (sr_type)type;
    o.progress = progress_trampoline;
    o.progress_user = &st;
    sr_matrix R = NULL;
    sr_status s;
    Py_BEGIN_ALLOW_THREADS s = sr_radius_neighbors(ctx, X, Q, r, (sr_metric)metric, arg, &o, &R);
    Py_END_ALLOW_THREADS if (st.python_error) return NULL;
    if (s != SR_SUCCESS)
        return raise_status(s);
    return wrap_matrix(context, R);
}

static PyObject *version(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    return PyUnicode_FromString(sr_version_string());
}

static PyObject *last_method(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    return PyUnicode_FromString(sr_last_method());
}

static PyMethodDef module_methods[] = {
    {"from_csr", from_csr, METH_VARARGS, "from_csr(ctx, nrows, ncols, type, indptr, indices, values)"},
    {"from_coo", from_coo, METH_VARARGS, "from_coo(ctx, nrows, ncols, type, rows, cols, values, sum_duplicates)"},
    {"from_dense", from_dense, METH_VARARGS, "from_dense(ctx, array, nrows, ncols, type, layout)"},
    {"read_mm", read_mm, METH_VARARGS, "read_mm(ctx, path, type=-1)"},
    {"spmv", spmv, METH_VARARGS, "spmv(ctx, y, A, x, semiring, mask, accumulate, complement)"},
    {"spmm", spmm, METH_VARARGS, "spmm(ctx, C, A, B, semiring, mask, accumulate, complement)"},
    {"binary", binary, METH_VARARGS, "binary(ctx, op, A, B, semiring, mask, C, complement, transpose_b); op 0 mxm, "
                                     "1 ewise_add, 2 ewise_mult, 3 kronecker"},
    {"sddmm", sddmm, METH_VARARGS, "sddmm(ctx, S, A, B, semiring, alpha, beta, pattern, values) -> Matrix or None"},
    {"sddmm_spmm", sddmm_spmm, METH_VARARGS, "sddmm_spmm(ctx, O, S, A, B, V, alpha, softmax, pattern, accumulate)"},
    {"factorize", factorize, METH_VARARGS,
     "factorize(ctx, R, R_test, W, H, rank, lambda, iterations, cg_steps, seed, center, use_initial, callback)"},
    {"fused_pattern", fused_pattern, METH_VARARGS,
     "fused_pattern(ctx, form, w, alpha, X_or_None, X_dense_or_None, v_or_None, y, beta, z_or_None)"},
    {"solve", solve, METH_VARARGS,
     "solve(ctx, kind, X, y, w, lambda_or_C, tolerance, max_iterations, fit_intercept, callback) -> (b, steps)"},
    {"mxm_row_blocks", mxm_row_blocks, METH_VARARGS, "mxm_row_blocks(ctx, A, B, semiring) -> row blocks"},
    {"row_blocks_info", row_blocks_info, METH_O, "row_blocks_info(blocks) -> [(first_row, nrows, ncols, nnz, type, "
                                                 "location, device)]"},
    {"row_blocks_export_csr", row_blocks_export_csr, METH_VARARGS,
     "row_blocks_export_csr(blocks, g, indptr, indices, values or None)"},
    {"row_blocks_gather", row_blocks_gather, METH_VARARGS, "row_blocks_gather(ctx, blocks) -> Matrix"},
    {"extract", extract, METH_VARARGS, "extract(ctx, A, row0, col0, nrows, ncols)"},
    {"reduce_rows", reduce_rows, METH_VARARGS, "reduce_rows(ctx, A, semiring)"},
    {"spmv_plan", spmv_plan, METH_VARARGS, "spmv_plan(ctx, A, drop) -> info tuple, or None with drop"},
    {"pagerank", pagerank, METH_VARARGS, "pagerank(ctx, A, rank, damping, tolerance, max_iterations, plan)"},
    {"mxm_bits", mxm_bits, METH_VARARGS, "mxm_bits(ctx, Y, mask, A, X, ncols, complement, replace, accumulate)"},
    {"closure", closure, METH_VARARGS, "closure(ctx, A, method)"},
    {"reachability", reachability, METH_VARARGS, "reachability(ctx, A, sources)"},
    {"cfpq", cfpq, METH_VARARGS, "cfpq(ctx, grammar, grammar_is_path, labels, graphs, symbol)"},
    {"read_labeled_graph", read_labeled_graph, METH_VARARGS, "read_labeled_graph(ctx, path, nvertices)"},
    {"bits_from_matrix", bits_from_matrix, METH_VARARGS, "bits_from_matrix(ctx, A, out)"},
    {"matrix_from_bits", matrix_from_bits, METH_VARARGS, "matrix_from_bits(ctx, words, nrows, ncols)"},
    {"bits_or", bits_or, METH_VARARGS, "bits_or(ctx, Y, X_or_None, nrows, ncols) -> set bits of Y"},
    {"semiring_output_type", semiring_output_type, METH_VARARGS, "semiring_output_type(semiring, type)"},
    {"semiring_define", semiring_define, METH_VARARGS, "semiring_define(name, type, add, identity, multiply) -> id"},
    {"metric_define", metric_define, METH_VARARGS,
     "metric_define(name, pair, norm, distance, over_union, similarity, pair2, norm2, reduce) -> id"},
    {"metric_from_name", metric_from_name, METH_O, "metric_from_name(name)"},
    {"pairwise", pairwise, METH_VARARGS, "pairwise(ctx, A, B, metric, arg, D)"},
    {"knn", knn, METH_VARARGS, "knn(ctx, index, queries, k, metric, arg, indices, distances, progress)"},
    {"knn_graph", knn_graph, METH_VARARGS,
     "knn_graph(ctx, X, k, metric, arg, distance_mode, include_self, symmetrize, type, progress)"},
    {"radius", radius, METH_VARARGS,
     "radius(ctx, X, queries_or_None, radius, metric, arg, distance_mode, include_self, type, progress)"},
    {"version", version, METH_NOARGS, "The library's version string."},
    {"last_method", last_method, METH_NOARGS, "The path the calling thread's last k-NN took."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_core", "The sparsering C library, bound as is.", -1,
                                        module_methods, NULL, NULL, NULL, NULL};

/* name, status, extra base (besides SparseringError) */
static const struct {
    const char *name;
    sr_status status;
    int base; /* 0 none, 1 ValueError, 2 MemoryError, 3 OSError, 4 NotImplementedError, 5 OverflowError */
} kErrors[] = {
    {"InvalidArgumentError", SR_ERROR_INVALID_ARGUMENT, 1}, {"InvalidMatrixError", SR_ERROR_INVALID_MATRIX, 1},
    {"SizeOverflowError", SR_ERROR_OVERFLOW, 5},           {"OutOfMemoryError", SR_ERROR_OUT_OF_MEMORY, 2},
    {"DeviceOutOfMemoryError", SR_ERROR_DEVICE_OUT_OF_MEMORY, 2},
    {"NoDeviceError", SR_ERROR_NO_DEVICE, 0},              {"DeviceError", SR_ERROR_DEVICE, 0},
    {"FileError", SR_ERROR_IO, 3},                         {"ParseError", SR_ERROR_PARSE, 1},
    {"UnsupportedError", SR_ERROR_UNSUPPORTED, 4},         {"InternalError", SR_ERROR_INTERNAL, 0},
    {"CancelledError", SR_ERROR_CANCELLED, 0},
};

PyMODINIT_FUNC PyInit__core(void)
{
    if (PyType_Ready(&ContextType) < 0 || PyType_Ready(&MatrixType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    Py_INCREF(&ContextType);
    Py_INCREF(&MatrixType);
    PyModule_AddObject(m, "Context", (PyObject *)&ContextType);
    PyModule_AddObject(m, "Matrix", (PyObject *)&MatrixType);
    PyObject *base = PyErr_NewExceptionWithDoc("sparsering.SparseringError",
                                               "A failure reported by the sparsering library; .status names it.",
                                               NULL, NULL);
    if (!base)
        return NULL;
    Py_INCREF(base);
    PyModule_AddObject(m, "SparseringError", base);
    PyObject *extra[] = {NULL, PyExc_ValueError, PyExc_MemoryError, PyExc_OSError, PyExc_NotImplementedError,
                         PyExc_OverflowError};
    for (size_t i = 0; i < sizeof kErrors / sizeof *kErrors; i++) {
        char qualified[96];
        snprintf(qualified, sizeof qualified, "sparsering.%s", kErrors[i].name);
        PyObject *bases = kErrors[i].base ? PyTuple_Pack(2, base, extra[kErrors[i].base]) : PyTuple_Pack(1, base);
        PyObject *cls = bases ? PyErr_NewException(qualified, bases, NULL) : NULL;
        Py_XDECREF(bases);
        if (!cls)
            return NULL;
        error_for_status[kErrors[i].status] = cls; /* the module keeps one reference, this table another */
        Py_INCREF(cls);
        PyModule_AddObject(m, kErrors[i].name, cls);
    }
    error_for_status[SR_SUCCESS] = base;
    if (PyModule_AddObject(m, "SEMIRINGS", names(semiring_name_of, SR_SEMIRING_COUNT)) < 0 ||
        PyModule_AddObject(m, "METRICS", names(metric_name_of, SR_METRIC_COUNT)) < 0)
        return NULL;
    PyModule_AddIntConstant(m, "HOST", SR_HOST);
    PyModule_AddIntConstant(m, "DEVICE", SR_DEVICE);
    return m;
}
