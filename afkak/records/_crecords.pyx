# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled twins of the v2 record codec in :mod:`afkak.records` (decoding, encoding).

Optional: built from setup.py when Cython and a compiler are at hand (and
``AFKAK_NO_EXTENSIONS`` is unset).  :func:`afkak.records.batch._decode_records`
is the reference; this module returns exactly what it returns and raises the
same errors (IndexError for a truncated record, which the caller turns into a
DecodeError; DecodeError; UnicodeDecodeError).  Input whose numbers leave
64 bits (10-byte varints above 2**64, sums past int64) makes it return None,
and the caller then runs the reference on that batch.

Also ``murmur2`` and ``key_partitions``: where a keyed record goes (Kafka's
partitioner, :mod:`afkak.partitioner`), a whole column of keys at a time; and
``record_runs``: a ``send_records`` call's records per partition, in runs that
fit a batch (:mod:`afkak.producer._record_runs`).

And ``untrack``, ``track_all`` and ``reachable``, which Python cannot write:
keeping objects that pile up by the thousand (a producer's waiting sends) off
the cyclic GC, and telling which of them nothing else refers to (see
:mod:`afkak.records.gc_pause`).

:class:`RecordColumns` decodes records into column buffers in Arrow's layout
instead (the Spark source's batches), with the same checks and errors; its
reference is the reference's records turned into columns.

Cython rather than C through a binding: the loop touches Python objects on
every field (bytes, tuples, ints), which Cython writes with the reference
counting done for us, and it needs no runtime dependency.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport (
    PyByteArray_AS_STRING,
    PyByteArray_FromStringAndSize,
    PyByteArray_GET_SIZE,
    PyByteArray_Resize,
)
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyTypeObject
from cpython.ref cimport Py_INCREF
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.tuple cimport PyTuple_GET_SIZE, PyTuple_SET_ITEM
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.string cimport memcpy

from _weakref import getweakrefcount

from afkak._errors import DecodeError
from afkak.records.record import Record

cdef extern from *:
    """
    static PyObject *afkak_alloc_tuple(PyObject *tp, Py_ssize_t n) {
        /* an empty instance of a tuple subclass, as tuple.__new__(tp, ...) makes */
        return ((PyTypeObject *)tp)->tp_alloc((PyTypeObject *)tp, n);
    }
    static int afkak_add_overflows(int64_t a, int64_t b, int64_t *out) {
        return __builtin_add_overflow(a, b, out);
    }
    static int afkak_sub_overflows(int64_t a, int64_t b, int64_t *out) {
        return __builtin_sub_overflow(a, b, out);
    }
    """
    object afkak_alloc_tuple(object tp, Py_ssize_t n)
    bint afkak_add_overflows(int64_t a, int64_t b, int64_t *out)
    bint afkak_sub_overflows(int64_t a, int64_t b, int64_t *out)

cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void *op)

cdef class RecordColumns


# Return codes of the readers below (besides 0, "done").
cdef enum:
    TRUNCATED = 1  # ran past the buffer: IndexError, like the reference
    TOO_BIG = 2  # a number beyond 64 bits: hand the batch to the reference
    TOO_LONG = 3  # a varint of more than 10 bytes: DecodeError

cdef object _EMPTY = ()
cdef object _TOO_BIG = object()  # a length beyond 64 bits: the reference decodes the batch


cdef inline int _varint(const unsigned char *buf, Py_ssize_t size, Py_ssize_t *pos, int64_t *out) noexcept nogil:
    """Decode the zigzag varint at pos[0], advancing it."""
    cdef uint64_t u = 0
    cdef unsigned int shift = 0
    cdef unsigned char b
    cdef Py_ssize_t p = pos[0]
    while shift < 70:
        if p >= size:
            return TRUNCATED
        b = buf[p]
        p += 1
        if shift == 63 and (b & 0x7F) > 1:
            return TOO_BIG
        u |= (<uint64_t>(b & 0x7F)) << shift
        if b < 0x80:
            pos[0] = p
            out[0] = <int64_t>(u >> 1) ^ -(<int64_t>(u & 1))
            return 0
        shift += 7
    pos[0] = p
    return TOO_LONG


cdef int _fail(int code, Py_ssize_t pos) except -1:
    if code == TRUNCATED:
        raise IndexError("record runs past the end of its batch")
    raise DecodeError("varint longer than 10 bytes", offset=pos)


cdef inline object _blob(const unsigned char *buf, Py_ssize_t start, int64_t n):
    return PyBytes_FromStringAndSize(<const char *>buf + start, <Py_ssize_t>n)


cdef inline int _record_start(const unsigned char *buf, Py_ssize_t size, Py_ssize_t *pos,
                              Py_ssize_t *end, int64_t base_offset, int64_t base_ts,
                              int64_t *off, int64_t *ts) except -1:
    """Read a record's length, attributes and deltas at pos[0], advancing it.

    Sets *end* (where the record must end; -1 and below never match), *off*
    and *ts*.  Returns 0, or TOO_BIG for a number beyond 64 bits; raises as
    the reference for the rest.
    """
    cdef int64_t length = 0, delta = 0
    cdef int rc = _varint(buf, size, pos, &length)
    if rc:
        if rc == TOO_BIG:
            return TOO_BIG
        _fail(rc, pos[0])
    end[0] = pos[0] + length if -1 <= length <= size else -2
    pos[0] += 1  # attributes, unused
    rc = _varint(buf, size, pos, &delta)
    if rc == 0 and afkak_add_overflows(base_ts, delta, ts):
        rc = TOO_BIG
    if rc == 0:
        rc = _varint(buf, size, pos, &delta)
        if rc == 0 and afkak_add_overflows(base_offset, delta, off):
            rc = TOO_BIG
    if rc:
        if rc == TOO_BIG:
            return TOO_BIG
        _fail(rc, pos[0])
    return 0


cdef object _nullable(const unsigned char *buf, Py_ssize_t size, Py_ssize_t *pos):
    """The nullable key or value at pos[0] (advancing it), or _TOO_BIG."""
    cdef int64_t n = 0
    cdef int rc = _varint(buf, size, pos, &n)
    if rc == TOO_BIG:
        return _TOO_BIG
    if rc:
        _fail(rc, pos[0])
    if n == -1:
        return None
    if n < -1:
        raise DecodeError(f"negative length {n}", offset=pos[0])
    if n > size - pos[0]:
        raise IndexError("a key or value runs past the end of its batch")
    blob = _blob(buf, pos[0], n)
    pos[0] += n
    return blob


cdef object _headers(const unsigned char *buf, Py_ssize_t size, Py_ssize_t *pos,
                     RecordColumns into=None, bint build=True):
    """Decode a record's headers (count included) at pos[0], advancing it.

    Returns a tuple of (key, value) pairs when *build*, else (); appends the
    headers to *into*'s header columns when given; None means "too big for 64
    bits" (or for 2 GiB of columns).  Keys are checked as UTF-8 either way.
    """
    cdef int64_t count = 0, n = 0, i, j
    cdef int rc
    cdef Py_ssize_t p = pos[0], key_at
    cdef object key = None
    rc = _varint(buf, size, &p, &count)
    if rc == TOO_BIG:
        return None
    if rc:
        _fail(rc, p)
    if count < 0:
        raise DecodeError(f"negative header count {count}", offset=p)
    out = [] if build else None
    i = 0
    while i < count:
        rc = _varint(buf, size, &p, &n)
        if rc == TOO_BIG:
            return None
        if rc:
            _fail(rc, p)
        if n < 0 or n > size - p:
            raise DecodeError(f"bad header key length {n}", offset=p)
        if build:
            key = PyUnicode_DecodeUTF8(<const char *>buf + p, <Py_ssize_t>n, NULL)
        else:
            for j in range(n):
                if buf[p + j] >= 0x80:  # not ASCII: UnicodeDecodeError as when building
                    PyUnicode_DecodeUTF8(<const char *>buf + p, <Py_ssize_t>n, NULL)
                    break
        key_at = p
        p += n
        if into is not None and into._add_header_key(buf + key_at, n):
            return None
        rc = _varint(buf, size, &p, &n)
        if rc == TOO_BIG:
            return None
        if rc:
            _fail(rc, p)
        if n < -1:
            raise DecodeError(f"negative length {n}", offset=p)
        if n > size - p:
            raise DecodeError("header value runs past the end", offset=p)
        if into is not None and into._add_header_value(buf + p, n):
            return None
        if build:
            out.append((key, None if n == -1 else _blob(buf, p, n)))
        if n > 0:
            p += n
        i += 1
    pos[0] = p
    return tuple(out) if build else _EMPTY


cdef inline void _put(object t, Py_ssize_t i, object item):
    """Fill item *i* of a new tuple."""
    Py_INCREF(item)
    PyTuple_SET_ITEM(t, i, item)


cdef inline object _record(object off, object ts, object tt, object key, object value,
                          object headers):
    """A :class:`Record`, built as ``tuple.__new__(Record, ...)`` builds it."""
    cdef object record = afkak_alloc_tuple(Record, 6)
    _put(record, 0, off)
    _put(record, 1, ts)
    _put(record, 2, tt)
    _put(record, 3, key)
    _put(record, 4, value)
    _put(record, 5, headers)
    PyObject_GC_UnTrack(<void *>record)
    return record


def decode_records(object data, Py_ssize_t pos, Py_ssize_t count, int64_t base_offset,
                   int64_t base_ts, object tt):
    """Decode *count* v2 records from *data* at *pos*: :class:`Record` tuples.

    Same contract as ``afkak.records.batch._decode_records``; None when the
    batch holds numbers beyond 64 bits, for the reference to decode.  *data*
    is bytes or any contiguous buffer (a view of a fetch response), read in
    place.
    """
    cdef Py_buffer view
    if type(data) is bytes:
        return _decode(<const unsigned char *>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data),
                       pos, count, base_offset, base_ts, tt)
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        return _decode(<const unsigned char *>view.buf, view.len,
                       pos, count, base_offset, base_ts, tt)
    finally:
        PyBuffer_Release(&view)


cdef object _decode(const unsigned char *buf, Py_ssize_t size, Py_ssize_t pos, Py_ssize_t count,
                    int64_t base_offset, int64_t base_ts, object tt):
    cdef Py_ssize_t end = 0, i
    cdef int64_t off = 0, ts = 0
    cdef object key, value, headers
    cdef list out = []
    for i in range(count):
        if _record_start(buf, size, &pos, &end, base_offset, base_ts, &off, &ts):
            return None
        # key and value
        key = _nullable(buf, size, &pos)
        if key is _TOO_BIG:
            return None
        value = _nullable(buf, size, &pos)
        if value is _TOO_BIG:
            return None
        # headers
        if pos >= size:
            raise IndexError("record runs past the end of its batch")
        if buf[pos] == 0:
            pos += 1
            headers = _EMPTY
        else:
            headers = _headers(buf, size, &pos)
            if headers is None:
                return None
        if pos != end:
            raise DecodeError(
                f"record at offset {off} does not fill its declared length", offset=pos
            )
        out.append(_record(off, ts, tt, key, value, headers))
    if pos != size:
        raise DecodeError("record batch has bytes after its last record", offset=pos)
    return out


def wrap_records(list records, object magic, tuple prefix, object cls, object message_cls):
    """``cls(*prefix, offset, message_cls(magic, 0, key, value))`` for each record.

    Compiled twin of ``afkak.records.messages._wrap_records``: each message gets
    the record's ``timestamp``, and its ``headers`` when it has any.
    """
    cdef Py_ssize_t width = len(prefix), i
    cdef tuple r
    cdef object message, wrapped, zero = 0
    cdef list out = []
    for record in records:
        r = <tuple>record
        message = afkak_alloc_tuple(message_cls, 4)
        _put(message, 0, magic)
        _put(message, 1, zero)
        _put(message, 2, r[3])
        _put(message, 3, r[4])
        message.timestamp = r[1]
        if r[5]:
            message.headers = r[5]
        wrapped = afkak_alloc_tuple(cls, width + 2)
        for i in range(width):
            _put(wrapped, i, prefix[i])
        _put(wrapped, width, r[0])
        _put(wrapped, width + 1, message)
        PyObject_GC_UnTrack(<void *>message)
        PyObject_GC_UnTrack(<void *>wrapped)
        out.append(wrapped)
    return out


cdef inline Py_ssize_t _zz_size(int64_t n) noexcept nogil:
    cdef uint64_t u = (<uint64_t>n << 1) ^ <uint64_t>(n >> 63)
    cdef Py_ssize_t size = 1
    while u > 0x7F:
        u >>= 7
        size += 1
    return size


cdef inline Py_ssize_t _zz_put(unsigned char *out, int64_t n) noexcept nogil:
    cdef uint64_t u = (<uint64_t>n << 1) ^ <uint64_t>(n >> 63)
    cdef Py_ssize_t i = 0
    while u > 0x7F:
        out[i] = <unsigned char>((u & 0x7F) | 0x80)
        u >>= 7
        i += 1
    out[i] = <unsigned char>u
    return i + 1


cdef inline Py_ssize_t _blob_size(object blob):
    """Encoded size of a nullable key or value; -1: not bytes (left to the reference)."""
    if blob is None:
        return 1
    if type(blob) is not bytes:
        return -1
    cdef Py_ssize_t n = PyBytes_GET_SIZE(blob)
    return _zz_size(n) + n


cdef inline Py_ssize_t _blob_put(unsigned char *out, object blob):
    if blob is None:
        out[0] = 1
        return 1
    cdef Py_ssize_t n = PyBytes_GET_SIZE(blob)
    cdef Py_ssize_t i = _zz_put(out, n)
    memcpy(out + i, PyBytes_AS_STRING(blob), n)
    return i + n


cdef extern from "Python.h":
    const char *PyUnicode_AsUTF8AndSize(object unicode, Py_ssize_t *size) except NULL


cdef Py_ssize_t _headers_size(object record_headers) except -2:
    """Encoded size of a record's headers (count, names, values); -1: left to the reference."""
    if type(record_headers) is not tuple and type(record_headers) is not list:
        return -1
    cdef Py_ssize_t size = _zz_size(len(record_headers)), name_size, part
    for pair in record_headers:
        if type(pair) is not tuple or len(pair) != 2 or type(pair[0]) is not str:
            return -1
        try:
            PyUnicode_AsUTF8AndSize(pair[0], &name_size)
        except UnicodeEncodeError:
            return -1
        part = _blob_size(pair[1])
        if part < 0:
            return -1
        size += _zz_size(name_size) + name_size + part
    return size


cdef Py_ssize_t _headers_put(unsigned char *out, object record_headers):
    """Write headers that ``_headers_size`` measured."""
    cdef Py_ssize_t i = _zz_put(out, len(record_headers)), name_size
    cdef const char *name
    for pair in record_headers:
        name = PyUnicode_AsUTF8AndSize(pair[0], &name_size)  # cached by the measuring
        i += _zz_put(out + i, name_size)
        memcpy(out + i, name, name_size)
        i += name_size
        i += _blob_put(out + i, pair[1])
    return i


def encode_records(values, keys, timestamps, base, headers=None):
    """The records section of a batch; None to leave it to the reference.

    Compiled twin of ``afkak.records.builder._encode_common`` /
    ``_encode_each``: *values* and *keys* (None: all null) hold bytes or
    None; each record's timestamp delta is its *timestamps* entry minus
    *base* (None: all 0); *headers* (None: none) holds each record's tuple or
    list of ``(str, bytes | None)`` tuples.  Anything else (bytearray,
    memoryview, a wrong type, a number beyond 64 bits) returns None.
    """
    cdef Py_ssize_t n = len(values), i, total = 0, size, part
    cdef int64_t delta = 0, stamp, base_ts = 0
    cdef int overflow = 0
    if (
        (keys is not None and len(keys) != n)
        or (timestamps is not None and len(timestamps) != n)
        or (headers is not None and len(headers) != n)
    ):
        return None
    cdef list vals = list(values)
    cdef list ks = None if keys is None else list(keys)
    cdef list ds = None if timestamps is None else list(timestamps)
    cdef list hs = None if headers is None else list(headers)
    if ds is not None:
        if type(base) is not int:
            return None
        base_ts = PyLong_AsLongLongAndOverflow(base, &overflow)
        if overflow:
            return None
    cdef Py_ssize_t *lengths = <Py_ssize_t *>PyMem_Malloc(max(n, 1) * sizeof(Py_ssize_t))
    cdef int64_t *dvals = <int64_t *>PyMem_Malloc(max(n, 1) * sizeof(int64_t))
    cdef unsigned char *out
    if lengths == NULL or dvals == NULL:
        PyMem_Free(lengths)
        PyMem_Free(dvals)
        raise MemoryError()
    try:
        for i in range(n):
            if ds is not None:
                item = ds[i]
                if type(item) is not int:
                    return None
                stamp = PyLong_AsLongLongAndOverflow(item, &overflow)
                if overflow or afkak_sub_overflows(stamp, base_ts, &delta):
                    return None
            dvals[i] = delta
            size = 1 + _zz_size(delta) + _zz_size(i)  # attributes, deltas
            part = _blob_size(vals[i])
            if part < 0:
                return None
            size += part
            if ks is None:
                size += 1
            else:
                part = _blob_size(ks[i])
                if part < 0:
                    return None
                size += part
            if hs is None:
                size += 1  # no headers
            else:
                part = _headers_size(hs[i])
                if part < 0:
                    return None
                size += part
            lengths[i] = size
            total += _zz_size(size) + size
        data = PyBytes_FromStringAndSize(NULL, total)
        out = <unsigned char *>PyBytes_AS_STRING(data)
        for i in range(n):
            out += _zz_put(out, lengths[i])
            out[0] = 0  # attributes
            out += 1
            out += _zz_put(out, dvals[i])
            out += _zz_put(out, i)
            if ks is None:
                out[0] = 1
                out += 1
            else:
                out += _blob_put(out, ks[i])
            out += _blob_put(out, vals[i])
            if hs is None:
                out[0] = 0  # no headers
                out += 1
            else:
                out += _headers_put(out, hs[i])
        return data
    finally:
        PyMem_Free(lengths)
        PyMem_Free(dvals)


cdef extern from *:
    """
    static int afkak_untrack_owned_list(PyObject *o, void *arg) {
        if (PyList_CheckExact(o) && Py_REFCNT(o) == 1 && PyObject_GC_IsTracked(o))
            PyObject_GC_UnTrack(o);
        return 0;
    }
    /* A chain entry's tuples (of callables, arguments) and the bound methods in
       them: hidden with the waiting Deferred holding them, shown again with it. */
    static int afkak_untrack_entry(PyObject *o, void *arg) {
        if (PyTuple_CheckExact(o) && PyObject_GC_IsTracked(o)) {
            PyObject_GC_UnTrack(o);
            Py_TYPE(o)->tp_traverse(o, afkak_untrack_entry, NULL);
        } else if (PyMethod_Check(o) && PyObject_GC_IsTracked(o)) {
            PyObject_GC_UnTrack(o);
        }
        return 0;
    }
    static int afkak_track_entry(PyObject *o, void *arg) {
        /* (never the empty tuple: a static singleton the GC does not track) */
        if (PyTuple_CheckExact(o) && PyTuple_GET_SIZE(o) && !PyObject_GC_IsTracked(o)) {
            PyObject_GC_Track(o);
            Py_TYPE(o)->tp_traverse(o, afkak_track_entry, NULL);
        } else if (PyMethod_Check(o) && !PyObject_GC_IsTracked(o)) {
            PyObject_GC_Track(o);
        }
        return 0;
    }
    static int afkak_track_list(PyObject *o, void *arg) {
        if (PyList_CheckExact(o)) {
            if (!PyObject_GC_IsTracked(o))
                PyObject_GC_Track(o);
            Py_TYPE(o)->tp_traverse(o, afkak_track_entry, NULL);
        }
        return 0;
    }
    static void afkak_untrack(PyObject *o) {
        if (PyObject_GC_IsTracked(o)) {
            Py_TYPE(o)->tp_traverse(o, afkak_untrack_owned_list, NULL);
            PyObject_GC_UnTrack(o);
        }
    }
    static void afkak_track(PyObject *o) {
        if (PyObject_IS_GC(o) && !PyObject_GC_IsTracked(o)) {
            Py_TYPE(o)->tp_traverse(o, afkak_track_list, NULL);
            PyObject_GC_Track(o);
        }
    }
    static int afkak_holds_tracked(PyObject *o) {
        /* o may refer to an object the cyclic GC follows: a tracked one, or a
           dict (which CPython tracks again when it is given such a value). */
        return PyObject_IS_GC(o) && (PyObject_GC_IsTracked(o) || PyDict_Check(o));
    }
    static int afkak_is_tracked(PyObject *o) {
        return PyObject_GC_IsTracked(o);
    }
    static void afkak_untrack_last_entry(PyObject *chain) {
        Py_ssize_t n;
        if (PyList_CheckExact(chain) && (n = PyList_GET_SIZE(chain)) > 0)
            afkak_untrack_entry(PyList_GET_ITEM(chain, n - 1), NULL);
    }
    """
    void afkak_untrack(object o)
    void afkak_untrack_last_entry(object chain)
    void afkak_track(object o)
    bint afkak_holds_tracked(object o)
    bint afkak_is_tracked(object o)

cdef extern from *:
    """
    /* 1 when nothing can reach o but the caller's list and the caller's own
       reference (two references): an instance of exactly cls, without weak
       references, whose attribute attr is an empty list; 0 otherwise; -1 on
       error. */
    static int afkak_unreachable(PyObject *o, PyObject *cls, PyObject *attr,
                                 PyObject *weakrefcount) {
        PyObject *got;
        Py_ssize_t offset;
        int empty;
        if ((PyObject *)Py_TYPE(o) != cls || Py_REFCNT(o) != 2)
            return 0;
        offset = ((PyTypeObject *)cls)->tp_weaklistoffset;
        if (offset > 0) {
            if (*(PyObject **)((char *)o + offset) != NULL)
                return 0;
        } else {
            got = PyObject_CallOneArg(weakrefcount, o);
            if (got == NULL)
                return -1;
            empty = PyObject_Not(got);  /* 1: no weak references */
            Py_DECREF(got);
            if (empty != 1)
                return empty;
        }
        got = PyObject_GetAttr(o, attr);
        if (got == NULL) {
            PyErr_Clear();
            return 0;
        }
        empty = PyList_CheckExact(got) && PyList_GET_SIZE(got) == 0;
        Py_DECREF(got);
        return empty;
    }
    """
    int afkak_unreachable(object o, object cls, object attr, object weakrefcount) except -1


def untrack(object obj):
    """Hide *obj* and the lists only it holds from the cyclic GC (see ``gc_pause``)."""
    afkak_untrack(obj)


def track_all(list objs):
    """Show each object of *objs* and the lists it holds to the cyclic GC again."""
    for item in objs:
        afkak_track(item)


def reachable(list objs, object cls, str attr):
    """The indexes of the objects of *objs* that anything else can reach.

    The others are instances of exactly *cls*, without weak references, whose
    attribute *attr* is an empty list, and which only *objs* refers to: no
    code can ever see them again.  Those returned are shown to the cyclic GC
    again (see ``untrack``).
    """
    cdef list out = []
    cdef Py_ssize_t i = 0
    while i < len(objs):  # (re-read: attr's lookup could change objs)
        item = objs[i]  # a reference of our own, besides the list's
        if not afkak_unreachable(item, cls, attr, getweakrefcount):
            afkak_track(item)
            out.append(i)
        i += 1
    return out


cdef inline char *_grown(bytearray buf, Py_ssize_t needed) except NULL:
    """*buf*'s storage, resized to at least *needed* bytes (doubling) first if shorter."""
    cdef Py_ssize_t size = PyByteArray_GET_SIZE(buf)
    if needed > size:
        PyByteArray_Resize(buf, max(needed, 2 * size))
    return PyByteArray_AS_STRING(buf)


cdef inline void _set_bit(unsigned char *bits, Py_ssize_t i, bint on) noexcept nogil:
    if i & 7 == 0:
        bits[i >> 3] = 0
    if on:
        bits[i >> 3] |= <unsigned char>(1 << (i & 7))


cdef int _append(bytearray data, Py_ssize_t *used, bytearray offsets, Py_ssize_t i,
                 const unsigned char *src, int64_t n) except -1:
    """Append *n* bytes (none if negative) to *data* as item *i* of a binary column.

    *used* is the data's length so far; item *i* ends at offsets[i + 1].
    Returns 0, or TOO_BIG past 2 GiB.
    """
    if n > 0:
        if used[0] + n > 0x7FFFFFFF:
            return TOO_BIG
        memcpy(_grown(data, used[0] + n) + used[0], src, <size_t>n)
        used[0] += n
    (<int32_t *>_grown(offsets, 4 * (i + 2)))[i + 1] = <int32_t>used[0]
    return 0


cdef class RecordColumns:
    """Decoded records as column buffers in Arrow's layout: no Python object per record.

    :meth:`add` appends a v2 batch's records; the buffers then hold, for
    ``rows`` records: ``offsets`` and ``timestamps`` (int64), ``types``
    (int32 timestamp types), and for keys and values a validity bitmap (bit
    set: not null), ``rows + 1`` int32 offsets into their data, and the data
    (``key_size`` and ``value_size`` bytes).  With *headers*, also each
    record's headers: ``rows + 1`` int32 ``header_offsets`` into
    ``header_count`` headers, whose keys (never null) and values are laid
    out as above.  Without, headers are checked but not kept.  The buffers
    are bytearrays, possibly longer than needed.  Errors are those of
    :func:`decode_records`.
    """

    cdef readonly Py_ssize_t rows, key_nulls, value_nulls, key_size, value_size
    cdef readonly bytearray offsets, timestamps, types
    cdef readonly bytearray key_valid, key_offsets, key_data
    cdef readonly bytearray value_valid, value_offsets, value_data
    cdef readonly bint headers
    cdef readonly Py_ssize_t header_count, header_key_size, header_value_size, header_value_nulls
    cdef readonly bytearray header_offsets, header_key_offsets, header_key_data
    cdef readonly bytearray header_value_valid, header_value_offsets, header_value_data
    cdef Py_ssize_t capacity, key_room, value_room
    cdef int64_t *p_offsets
    cdef int64_t *p_timestamps
    cdef int32_t *p_types
    cdef int32_t *p_key_offsets
    cdef int32_t *p_value_offsets
    cdef unsigned char *p_key_valid
    cdef unsigned char *p_value_valid
    cdef unsigned char *p_key_data
    cdef unsigned char *p_value_data

    def __cinit__(self, Py_ssize_t rows_hint=1024, Py_ssize_t bytes_hint=65536,
                  bint headers=False):
        self.capacity = 0
        self.headers = headers
        self.header_offsets = PyByteArray_FromStringAndSize(NULL, 0)
        self.header_key_offsets = PyByteArray_FromStringAndSize(NULL, 4)
        self.header_key_data = PyByteArray_FromStringAndSize(NULL, 0)
        self.header_value_valid = PyByteArray_FromStringAndSize(NULL, 0)
        self.header_value_offsets = PyByteArray_FromStringAndSize(NULL, 4)
        self.header_value_data = PyByteArray_FromStringAndSize(NULL, 0)
        (<int32_t *>PyByteArray_AS_STRING(self.header_key_offsets))[0] = 0
        (<int32_t *>PyByteArray_AS_STRING(self.header_value_offsets))[0] = 0
        self.offsets = PyByteArray_FromStringAndSize(NULL, 0)
        self.timestamps = PyByteArray_FromStringAndSize(NULL, 0)
        self.types = PyByteArray_FromStringAndSize(NULL, 0)
        self.key_valid = PyByteArray_FromStringAndSize(NULL, 0)
        self.value_valid = PyByteArray_FromStringAndSize(NULL, 0)
        self.key_offsets = PyByteArray_FromStringAndSize(NULL, 0)
        self.value_offsets = PyByteArray_FromStringAndSize(NULL, 0)
        self.key_data = PyByteArray_FromStringAndSize(NULL, 0)
        self.value_data = PyByteArray_FromStringAndSize(NULL, 0)
        self._reserve_rows(max(rows_hint, 8))
        self.p_key_offsets[0] = 0
        self.p_value_offsets[0] = 0
        self._reserve_data(0, 64)
        self._reserve_data(1, max(bytes_hint, 64))

    cdef int _reserve_rows(self, Py_ssize_t n) except -1:
        """Room for *n* rows at least."""
        if n <= self.capacity:
            return 0
        n = max(n, 2 * self.capacity)
        self.p_offsets = <int64_t *>_grown(self.offsets, 8 * n)
        self.p_timestamps = <int64_t *>_grown(self.timestamps, 8 * n)
        self.p_types = <int32_t *>_grown(self.types, 4 * n)
        self.p_key_valid = <unsigned char *>_grown(self.key_valid, n // 8 + 1)
        self.p_value_valid = <unsigned char *>_grown(self.value_valid, n // 8 + 1)
        self.p_key_offsets = <int32_t *>_grown(self.key_offsets, 4 * (n + 1))
        self.p_value_offsets = <int32_t *>_grown(self.value_offsets, 4 * (n + 1))
        if self.headers:
            (<int32_t *>_grown(self.header_offsets, 4 * (n + 1)))[0] = 0
        self.capacity = n
        return 0

    cdef int _add_header_key(self, const unsigned char *key, int64_t n) except -1:
        """Append a header key of *n* bytes; TOO_BIG past 2 GiB."""
        return _append(self.header_key_data, &self.header_key_size, self.header_key_offsets,
                       self.header_count, key, n)

    cdef int _add_header_value(self, const unsigned char *value, int64_t n) except -1:
        """Append the value (*n* bytes, -1: null) of the header whose key came last."""
        cdef Py_ssize_t h = self.header_count
        if _append(self.header_value_data, &self.header_value_size, self.header_value_offsets,
                   h, value, n):
            return TOO_BIG
        _set_bit(<unsigned char *>_grown(self.header_value_valid, h // 8 + 1), h, n >= 0)
        self.header_value_nulls += n < 0
        self.header_count += 1
        return 0

    cdef int _reserve_data(self, bint value, Py_ssize_t n) except -1:
        """Room for *n* bytes of key (*value* false) or value data at least."""
        if value:
            self.p_value_data = <unsigned char *>_grown(self.value_data, n)
            self.value_room = PyByteArray_GET_SIZE(self.value_data)
        else:
            self.p_key_data = <unsigned char *>_grown(self.key_data, n)
            self.key_room = PyByteArray_GET_SIZE(self.key_data)
        return 0

    cdef int _blob(self, const unsigned char *buf, Py_ssize_t size, Py_ssize_t *pos,
                   bint value, bint keep) except -1:
        """Read the nullable key or value at pos[0]; append it to row ``rows`` when *keep*.

        Returns 0, or TOO_BIG for a length beyond 64 bits or data past 2 GiB.
        """
        cdef int64_t n = 0
        cdef int rc = _varint(buf, size, pos, &n)
        cdef Py_ssize_t used
        if rc == TOO_BIG:
            return TOO_BIG
        if rc:
            _fail(rc, pos[0])
        if n < -1:
            raise DecodeError(f"negative length {n}", offset=pos[0])
        if n > size - pos[0]:
            raise IndexError("a key or value runs past the end of its batch")
        if not keep:
            if n > 0:
                pos[0] += n
            return 0
        used = self.value_size if value else self.key_size
        if n > 0:
            if used + n > 0x7FFFFFFF:
                return TOO_BIG
            if used + n > (self.value_room if value else self.key_room):
                self._reserve_data(value, used + n)
            memcpy((self.p_value_data if value else self.p_key_data) + used, buf + pos[0],
                   <size_t>n)
            used += n
            pos[0] += n
        if value:
            _set_bit(self.p_value_valid, self.rows, n >= 0)
            self.value_nulls += n < 0
            self.p_value_offsets[self.rows + 1] = <int32_t>used
            self.value_size = used
        else:
            _set_bit(self.p_key_valid, self.rows, n >= 0)
            self.key_nulls += n < 0
            self.p_key_offsets[self.rows + 1] = <int32_t>used
            self.key_size = used
        return 0

    def add(self, object data, Py_ssize_t count, int64_t base_offset, int64_t base_ts,
            int32_t tt, object fixed_ts, int64_t min_offset, int64_t end_offset):
        """Append the records of a v2 batch's *data* whose offsets are in [min_offset, end_offset).

        *data* holds *count* records and nothing else; *fixed_ts* replaces every
        record's timestamp when not None (LOG_APPEND_TIME).  Returns False when
        the batch holds numbers beyond 64 bits (or data past 2 GiB), leaving
        the columns unusable: decode with :func:`decode_records` then.  *data*
        is bytes or any contiguous buffer, read in place.
        """
        cdef Py_buffer view
        if type(data) is bytes:
            return self._add(<const unsigned char *>PyBytes_AS_STRING(data),
                             PyBytes_GET_SIZE(data), count, base_offset, base_ts, tt, fixed_ts,
                             min_offset, end_offset)
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            return self._add(<const unsigned char *>view.buf, view.len, count, base_offset,
                             base_ts, tt, fixed_ts, min_offset, end_offset)
        finally:
            PyBuffer_Release(&view)

    cdef bint _add(self, const unsigned char *buf, Py_ssize_t size, Py_ssize_t count,
                   int64_t base_offset, int64_t base_ts, int32_t tt, object fixed_ts,
                   int64_t min_offset, int64_t end_offset) except -1:
        cdef Py_ssize_t pos = 0, end = 0, i
        cdef int64_t off = 0, ts = 0, fixed = 0
        cdef bint keep, use_fixed = fixed_ts is not None
        if use_fixed:
            fixed = fixed_ts
        for i in range(count):
            if _record_start(buf, size, &pos, &end, base_offset, base_ts, &off, &ts):
                return False
            keep = min_offset <= off < end_offset
            if keep and self.rows == self.capacity:
                self._reserve_rows(self.rows + 1)
            if self._blob(buf, size, &pos, False, keep) or self._blob(buf, size, &pos, True, keep):
                return False
            if pos >= size:
                raise IndexError("record runs past the end of its batch")
            if buf[pos] == 0:
                pos += 1
            elif _headers(buf, size, &pos, self if keep and self.headers else None, False) is None:
                return False
            if pos != end:
                raise DecodeError(
                    f"record at offset {off} does not fill its declared length", offset=pos
                )
            if keep:
                if self.headers:
                    (<int32_t *>PyByteArray_AS_STRING(self.header_offsets))[self.rows + 1] = (
                        <int32_t>self.header_count
                    )
                self.p_offsets[self.rows] = off
                self.p_timestamps[self.rows] = fixed if use_fixed else ts
                self.p_types[self.rows] = tt
                self.rows += 1
        if pos != size:
            raise DecodeError("record batch has bytes after its last record", offset=pos)
        return True


# -- a Deferred's hot paths (afkak.producer._deferred) ------------------------
#
# Twisted's Deferred, for the commonest moves of a send's Deferred: a callback
# added to one that has fired (gathering, awaiting, addCallback after the
# acknowledgement) runs at once, and firing one with no callback, or with one,
# records the result or runs that callback, without building Twisted's chain
# entries and loop.  Anything else (a Failure, a paused or running chain, debug
# mode, a callback that returns a Deferred or adds callbacks) is left to, or
# handed back to, Twisted's own code.  bind_deferred() gives these Twisted's
# names; until then no method here is bound to a class.

cdef object _Failure = None  # twisted.python.failure.Failure
cdef list _deferred_types = None  # twisted's _DEFERRED_SUBCLASSES (type(x) in it)
cdef object _base_add_callbacks = None  # Deferred.addCallbacks, .addCallback ...
cdef object _base_add_callback = None
cdef object _base_add_errback = None
cdef object _base_add_both = None
cdef object _base_callback = None
cdef object _none_kwargs = None  # twisted's _NONE_KWARGS
cdef object _warn_about = None  # twisted.python.deprecate.warnAboutFunction
cdef object _continue = None  # twisted's _CONTINUE: a chained Deferred's entry
cdef object _gathering = None  # DeferredList._cbDeferred: a gathering's entry
cdef object _ABSENT = object()

_SELF_RETURNED = (
    "Callback returned the Deferred it was attached to; this breaks the "
    "callback chain and will raise an exception in the future."
)


def bind_deferred(
    base, failure, list deferred_types, none_kwargs, continue_, warn_about, gathering=None
):
    """Give this module Twisted's Deferred, Failure and the private names it uses
    (*gathering*: the function DeferredList adds to each Deferred it gathers)."""
    global _Failure, _deferred_types, _none_kwargs, _warn_about, _continue, _gathering
    _gathering = gathering
    global _base_add_callbacks, _base_add_callback, _base_add_errback, _base_add_both
    global _base_callback
    _Failure, _deferred_types, _none_kwargs = failure, deferred_types, none_kwargs
    _warn_about, _continue = warn_about, continue_
    _base_add_callbacks, _base_add_callback = base.addCallbacks, base.addCallback
    _base_add_errback, _base_add_both = base.addErrback, base.addBoth
    _base_callback = base.callback


def _handing(_, d):
    """A chain entry giving *d*: how a Deferred a callback returned goes back to Twisted."""
    return d


cdef inline bint _settled(d) except -1:
    """*d* has fired with a success, its chain has run and nothing holds it: a callback
    added runs now.  (A Deferred as its result, left by an unpause, is Twisted's to chain.)"""
    if not d.called or d.paused or d._runningCallbacks or d._callbacks or d.debug:
        return 0
    result = d.result
    return not isinstance(result, _Failure) and type(result) not in _deferred_types


cdef inline void _shown_if_holding(d) except *:
    """Show *d* (and its callback list) to the cyclic GC again if it was left untracked
    fired (``fire_records``) and now holds what the GC must follow: a callback, a
    pause, a chain, debugging, or a result the GC tracks.  An untracked container is
    never unsafe (what it refers to is kept, not freed) but a cycle through it would
    not be collected; every compiled move ends here, and ``SendDeferred.pause``
    shows it first."""
    if afkak_is_tracked(d) or not d.called:
        return
    if (
        d._callbacks
        or d.paused
        or d._chainedTo is not None
        or d._debugInfo is not None
        or afkak_holds_tracked(d.result)
    ):
        afkak_track(d)


cdef inline void _hidden_if_waiting(d) except *:
    """Hide the entry just added to *d*'s chain from the cyclic GC if *d* waits hidden
    (a send in its batch, see ``gc_pause``): an application gathering thousands of
    sends before they are acknowledged gives each a chain entry of three tuples and
    two bound methods, which would otherwise feed the full collections until the
    batch settles.  Tracking *d* again (``afkak_track``) shows its entries again."""
    if not d.called and not afkak_is_tracked(d):
        afkak_untrack_last_entry(d._callbacks)


cdef _run_now(d, callback, tuple args, kwargs):
    """Run *callback* on *d*'s result as Twisted's loop would, the chain being empty."""
    d._chainedTo = None
    d._runningCallbacks = True
    try:
        try:
            if kwargs:
                out = callback(d.result, *args, **kwargs)
            else:
                out = callback(d.result, *args)
            if out is d:
                _warn_about(callback, _SELF_RETURNED)
        finally:
            d._runningCallbacks = False
    except BaseException:
        d.result = _Failure(captureVars=d.debug)
        _in_twisted(d)
        return d
    if type(out) in _deferred_types:
        if out is d:
            # What Twisted's loop does then: d waits on itself, for good.
            d.result = d
            d.pause()
            d._chainedTo = d
            d._callbacks.append(d._continuation())
            if d._debugInfo is not None:
                d._debugInfo.failResult = None
            return d
        # Twisted's loop takes it from here, as if this callback were still first.
        d._callbacks.insert(0, ((_handing, (out,), _none_kwargs), (_handing, (out,), _none_kwargs)))
        _in_twisted(d)
        return d
    d.result = out
    if d._callbacks or d._debugInfo is not None or isinstance(out, _Failure):
        _in_twisted(d)
    return d


cdef _in_twisted(d):
    """Twisted's loop over what is left of *d*'s chain, its pause count set aside as
    its loop sets it aside for the rest of a running chain."""
    paused = d.paused
    if paused:
        d.paused = 0
    d._runCallbacks()
    if paused:
        d.paused += paused


def deferred_add_callbacks(
    self,
    callback,
    errback=None,
    callbackArgs=(),
    callbackKeywords=_ABSENT,
    errbackArgs=(),
    errbackKeywords=_ABSENT,
):
    """Deferred.addCallbacks; on a settled Deferred, the callback run at once."""
    if callbackKeywords is _ABSENT:
        callbackKeywords = _none_kwargs
    if type(callbackArgs) is tuple and callbackKeywords is not None and _settled(self):
        result = self.result
        _run_now(self, callback, callbackArgs, callbackKeywords)
        if len(callbackArgs) == 2 and getattr(callback, "__func__", None) is _gathering:
            _hide_pair(_results_of(callback, callbackArgs), result)
    else:
        if errbackKeywords is _ABSENT:
            errbackKeywords = _none_kwargs
        _base_add_callbacks(
            self, callback, errback, callbackArgs, callbackKeywords, errbackArgs, errbackKeywords
        )
        _hidden_if_waiting(self)
    _shown_if_holding(self)
    return self


def deferred_add_callback(self, callback, *args, **kwargs):
    """Deferred.addCallback; on a settled Deferred, the callback run at once."""
    if _settled(self):
        _run_now(self, callback, args, kwargs)
    else:
        _base_add_callback(self, callback, *args, **kwargs)
        _hidden_if_waiting(self)
    _shown_if_holding(self)
    return self


def deferred_add_both(self, callback, *args, **kwargs):
    """Deferred.addBoth; on a settled Deferred (a success), the callback run at once."""
    if _settled(self):
        _run_now(self, callback, args, kwargs)
    else:
        _base_add_both(self, callback, *args, **kwargs)
        _hidden_if_waiting(self)
    _shown_if_holding(self)
    return self


def deferred_add_errback(self, errback, *args, **kwargs):
    """Deferred.addErrback; nothing to run on a settled Deferred (a success)."""
    if _settled(self) and self._debugInfo is None:
        self._chainedTo = None  # what Twisted's loop leaves
        self._runningCallbacks = False
        return self
    _base_add_errback(self, errback, *args, **kwargs)
    _hidden_if_waiting(self)
    _shown_if_holding(self)
    return self


def deferred_callback(self, result):
    """Deferred.callback; with no callback yet, or one, the result recorded or that
    callback run, when nothing else is in the way."""
    if not _fired(self, result):
        _base_callback(self, result)
    _shown_if_holding(self)


cdef bint _fired(d, result) except -1:
    """``d.callback(result)`` done here, if *d* has no callback or one and nothing else
    is in the way; 0 if it is left to Twisted."""
    cdef list chain
    if (
        d.called
        or d.paused
        or d.debug
        or d._debugInfo is not None
        or type(result) in _deferred_types
        or isinstance(result, _Failure)
    ):
        return 0
    chain = d._callbacks
    if chain and (
        len(chain) > 1 or chain[0][0][0] is _continue or type(chain[0][0][1]) is not tuple
    ):
        return 0
    d.called = True
    d._canceller = None
    d.result = result
    if not chain:
        d._chainedTo = None
        return 1
    entry = chain.pop()[0]
    _run_now(d, entry[0], entry[1], entry[2])
    return 1


cdef extern from *:
    """
    #include "structmember.h"
    /* Set the slot that the member descriptor descr describes (a frozen class's). */
    static int afkak_set_slot(PyObject *obj, PyObject *descr, PyObject *value) {
        return PyMember_SetOne((char *)obj, ((PyMemberDescrObject *)descr)->d_member, value);
    }
    """
    int afkak_set_slot(object obj, object descr, object value) except -1


def fire_records(
    list waiters,
    list indexes,
    list stamps,
    str topic,
    partition,
    int64_t base_offset,
    int64_t log_append_time,
    send_type,
    str attr,
    metadata_type,
    tuple slots,
):
    """Fire an acknowledged batch's ``send()`` Deferreds (the producer's ``_fire_records``).

    Each of *waiters* that anything else can reach (see ``reachable``) is
    fired with a *metadata_type* (whose four
    slots' member descriptors are *slots*) for its record: offset *base_offset*
    plus the record's index from *indexes* (-1 if *base_offset* is), timestamp
    from *stamps* unless *log_append_time* is given; built untracked (a str and
    ints).  A *send_type* Deferred is fired by the shortcut above when it can be;
    one without callbacks stays hidden from the cyclic GC, holding nothing it
    tracks (an application keeping thousands before gathering them would
    otherwise feed the full collections), until a move shows it again
    (``_shown_if_holding``); the others are shown to it again first.
    """
    cdef Py_ssize_t i = 0, index
    cdef int64_t offset
    set_topic, set_partition, set_offset, set_timestamp = slots
    new = metadata_type.__new__
    while i < len(waiters):  # (re-read: a callback could change the list)
        d = waiters[i]
        i += 1
        if afkak_unreachable(d, send_type, attr, getweakrefcount):
            continue
        index = indexes[i - 1]
        offset = base_offset + index if base_offset >= 0 else -1
        metadata = new(metadata_type)
        afkak_set_slot(metadata, set_topic, topic)
        afkak_set_slot(metadata, set_partition, partition)
        afkak_set_slot(metadata, set_offset, offset)
        afkak_set_slot(
            metadata, set_timestamp, stamps[index] if log_append_time < 0 else log_append_time
        )
        PyObject_GC_UnTrack(<void *>metadata)  # immutable, of a str and ints
        if type(d) is send_type and not d._callbacks and _fired(d, metadata):
            continue  # still untracked: it holds only untracked objects
        afkak_track(d)
        gathered = _gathered_at(d)
        if type(d) is not send_type or not _fired(d, metadata):
            d.callback(metadata)
        if gathered is not None:
            _hide_pair(gathered, metadata)
            _hidden_if_bare(d)


cdef inline void _hidden_if_bare(d) except *:
    """Hide *d* from the cyclic GC again once its chain has run and it holds only what
    the GC does not track (as a send fired without callbacks stays): what
    ``_shown_if_holding`` undoes."""
    if (
        afkak_is_tracked(d)
        and d.called
        and not d._callbacks
        and not d.paused
        and d._chainedTo is None
        and d._debugInfo is None
        and not afkak_holds_tracked(d.result)
    ):
        afkak_untrack(d)


cdef _gathered_at(d):
    """``(results, index)`` when *d*'s one callback is a gathering's (``gatherResults``,
    ``DeferredList``): where the pair it stores for *d* goes; else None."""
    chain = d._callbacks
    if _gathering is None or type(chain) is not list or len(chain) != 1:
        return None
    entry = chain[0]
    if type(entry) is not tuple or len(entry) != 2 or type(entry[0]) is not tuple:
        return None
    first = entry[0]
    if len(first) != 3 or getattr(first[0], "__func__", None) is not _gathering:
        return None
    args = first[1]
    if type(args) is not tuple or len(args) != 2:
        return None
    return _results_of(first[0], args)


cdef tuple _results_of(gathering, tuple args):
    """``(results, index)``: where a gathering's entry (bound *gathering*, *args*)
    stores its pair."""
    return getattr(gathering.__self__, "resultList", None), args[0]


cdef void _hide_pair(tuple gathered, metadata) except *:
    """Untrack the ``(True, metadata)`` pair a gathering stored: the GC keeps a pair
    of a RecordMetadata tracked (its class could hold anything), and an application
    gathering thousands of sends holds thousands until the last is acknowledged,
    each scanned by every full collection meanwhile.  It holds True and an
    untracked RecordMetadata (a str and ints): no cycle can go through it."""
    results, index = gathered
    if type(results) is not list or type(index) is not int or not 0 <= index < len(results):
        return
    pair = results[index]
    if type(pair) is tuple and len(pair) == 2 and pair[1] is metadata and pair[0] is True:
        if afkak_is_tracked(pair) and not afkak_is_tracked(metadata):
            PyObject_GC_UnTrack(<void *>pair)


# -- murmur2: where Kafka's clients place a keyed record (afkak.partitioner) --

cdef inline uint32_t _murmur2(const unsigned char *data, Py_ssize_t length, uint32_t seed) noexcept nogil:
    """MurmurHash2 as Kafka's ``Utils.murmur2`` (its reference: ``afkak.partitioner._murmur2``)."""
    cdef uint32_t m = 0x5BD1E995, k
    cdef uint32_t h = seed ^ <uint32_t>length
    cdef Py_ssize_t i, whole = length & ~(<Py_ssize_t>3)
    for i in range(0, whole, 4):
        k = (data[i] | (<uint32_t>data[i + 1] << 8) | (<uint32_t>data[i + 2] << 16)
             | (<uint32_t>data[i + 3] << 24))
        k *= m
        k ^= k >> 24
        k *= m
        h = (h * m) ^ k
    i = length & 3
    if i == 3:
        h ^= <uint32_t>data[whole + 2] << 16
    if i >= 2:
        h ^= <uint32_t>data[whole + 1] << 8
    if i:
        h ^= data[whole]
        h *= m
    h ^= h >> 13
    h *= m
    h ^= h >> 15
    return h


def murmur2(object data, object seed=0x9747B28C):
    """Compiled twin of ``afkak.partitioner._murmur2``: *data* is any contiguous buffer."""
    cdef uint32_t s = seed & 0xFFFFFFFF
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        return _murmur2(<const unsigned char *>view.buf, view.len, s)
    finally:
        PyBuffer_Release(&view)


def key_partitions(object keys, object partitions, object other):
    """Each of *keys*' partition among *partitions* (``partitioner._by_key``'s for a column).

    A ``bytes`` key is hashed here; any other (None, str, bytearray ...) is
    ``other(key)``'s, in order.  Raises ZeroDivisionError for no partitions,
    as the reference does.
    """
    cdef list ks = keys if type(keys) is list else list(keys)
    cdef list parts = partitions if type(partitions) is list else list(partitions)
    cdef Py_ssize_t n = len(ks), count = len(parts), i
    cdef uint32_t h
    if not count:
        raise ZeroDivisionError("integer modulo by zero")
    cdef list placed = [None] * n
    for i in range(n):
        key = ks[i]
        if type(key) is bytes:
            h = _murmur2(<const unsigned char *>PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key),
                         0x9747B28C)
            placed[i] = parts[(h & 0x7FFFFFFF) % count]
        else:
            placed[i] = other(key)
    return placed


def plain_headers(list headers):
    """Whether each of *headers* (a record's) is a tuple of ``(str, bytes | None)``
    tuples whose names are UTF-8: what the producer's ``_check_headers``
    accepts unchanged, checked for a whole column.  False: check them there."""
    cdef Py_ssize_t name_size
    for record_headers in headers:
        if type(record_headers) is not tuple:
            return False
        for pair in <tuple>record_headers:
            if type(pair) is not tuple or len(pair) != 2 or type(pair[0]) is not str:
                return False
            value = pair[1]
            if value is not None and type(value) is not bytes:
                return False
            try:
                PyUnicode_AsUTF8AndSize(pair[0], &name_size)
            except UnicodeEncodeError:
                return False
    return True


# -- send_records: records per partition, in runs that fit a batch --------------

cdef enum:
    RECORD_ESTIMATE = 10  # afkak.producer._batch.RECORD_OVERHEAD


cdef inline Py_ssize_t _blob_len(object blob) except -1:
    if blob is None:
        return 0
    if type(blob) is bytes:
        return PyBytes_GET_SIZE(blob)
    return len(blob)


cdef Py_ssize_t _headers_estimate(object record_headers) except -1:
    """``afkak.producer._record_runs.headers_size``."""
    cdef Py_ssize_t size = 0
    if type(record_headers) is tuple and not PyTuple_GET_SIZE(record_headers):
        return 0
    for name, value in record_headers:
        size += len(name) + _blob_len(value) + 3
    return size


cdef list _picked(list items, const Py_ssize_t *rows, Py_ssize_t count):
    """``[items[i] for i in rows[:count]]``."""
    cdef list out = PyList_New(count)
    cdef Py_ssize_t k
    cdef object item
    for k in range(count):
        item = items[rows[k]]
        Py_INCREF(item)
        PyList_SET_ITEM(out, k, item)
    return out


cdef tuple _run(object partition, list ks, list vs, list hs, list ts, object default,
                const Py_ssize_t *rows, Py_ssize_t count, Py_ssize_t size):
    """One run: ``(partition, keys, values, headers, timestamps, size)``."""
    cdef list stamps
    cdef Py_ssize_t k
    cdef object stamp
    if ts is None:
        stamps = [default] * count
    else:
        stamps = PyList_New(count)
        for k in range(count):
            stamp = ts[rows[k]]
            if stamp is None:
                stamp = default
            Py_INCREF(stamp)
            PyList_SET_ITEM(stamps, k, stamp)
    return (
        partition,
        None if ks is None else _picked(ks, rows, count),
        _picked(vs, rows, count),
        None if hs is None else _picked(hs, rows, count),
        stamps,
        size,
    )


cdef inline list _as_list_or_none(object items, Py_ssize_t n, str name):
    if items is None:
        return None
    cdef list out = items if type(items) is list else list(items)
    if len(out) != n:
        raise ValueError(f"{name} has {len(out)} items for {n} values")
    return out


def record_runs(object partitions, object keys, object values, object headers,
                object timestamps, object default_timestamp, Py_ssize_t limit):
    """``afkak.producer._record_runs._record_runs``, in one pass over the columns: each
    record's size, its partition's slot (in order of first appearance), the records
    ordered by slot (stable), then each slot's runs."""
    cdef list vs = values if type(values) is list else list(values)
    cdef Py_ssize_t n = len(vs)
    cdef list ps = _as_list_or_none(partitions, n, "partitions")
    cdef list ks = _as_list_or_none(keys, n, "keys")
    cdef list hs = _as_list_or_none(headers, n, "headers")
    cdef list ts = _as_list_or_none(timestamps, n, "timestamps")
    if not n:
        raise ValueError("no records")
    cdef Py_ssize_t i, j, slot, slots = 0, total = 0, largest = 0, size, room, start, begin
    cdef dict slot_of_partition = {}
    cdef list firsts = []
    cdef list runs = []
    cdef object found
    cdef Py_ssize_t *sizes = <Py_ssize_t *>PyMem_Malloc(n * sizeof(Py_ssize_t))
    cdef Py_ssize_t *slot_of = <Py_ssize_t *>PyMem_Malloc(n * sizeof(Py_ssize_t))
    cdef Py_ssize_t *rows = <Py_ssize_t *>PyMem_Malloc(n * sizeof(Py_ssize_t))
    cdef Py_ssize_t *ends = <Py_ssize_t *>PyMem_Malloc(n * sizeof(Py_ssize_t))
    try:
        if sizes == NULL or slot_of == NULL or rows == NULL or ends == NULL:
            raise MemoryError()
        for i in range(n):
            size = RECORD_ESTIMATE + _blob_len(vs[i])
            if ks is not None:
                size += _blob_len(ks[i])
            if hs is not None:
                size += _headers_estimate(hs[i])
            sizes[i] = size
            total += size
            if size > largest:
                largest = size
            partition = ps[i]
            found = slot_of_partition.get(partition)
            if found is None:
                slot_of_partition[partition] = slots
                firsts.append(partition)
                ends[slots] = 0
                slot = slots
                slots += 1
            else:
                slot = found
            slot_of[i] = slot
            ends[slot] += 1
        start = 0
        for slot in range(slots):  # counts to each slot's first position
            start, ends[slot] = start + ends[slot], start
        for i in range(n):  # then to each slot's end
            rows[ends[slot_of[i]]] = i
            ends[slot_of[i]] += 1
        begin = 0
        for slot in range(slots):
            partition = firsts[slot]
            start, room = begin, limit
            for j in range(begin, ends[slot]):
                size = sizes[rows[j]]
                if size > room and j > start:
                    runs.append(_run(partition, ks, vs, hs, ts, default_timestamp,
                                     rows + start, j - start, limit - room))
                    start, room = j, limit
                room -= size
            runs.append(_run(partition, ks, vs, hs, ts, default_timestamp,
                             rows + start, ends[slot] - start, limit - room))
            begin = ends[slot]
    finally:
        PyMem_Free(sizes)
        PyMem_Free(slot_of)
        PyMem_Free(rows)
        PyMem_Free(ends)
    return total, largest, runs
