# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Compiled twins of the v2 record codec in :mod:`afkak.records` (decoding, encoding).

Optional: built from setup.py when Cython and a compiler are at hand (and
``AFKAK_NO_EXTENSIONS`` is unset).  :func:`afkak.records.batch._decode_records`
is the reference; this module returns exactly what it returns and raises the
same errors (IndexError for a truncated record, which the caller turns into a
DecodeError; DecodeError; UnicodeDecodeError).  Input whose numbers leave
64 bits (10-byte varints above 2**64, sums past int64) makes it return None,
and the caller then runs the reference on that batch.

Also ``untrack``, ``track_all`` and ``reachable``, which Python cannot write:
keeping objects that pile up by the thousand (a producer's waiting sends) off
the cyclic GC, and telling which of them nothing else refers to (see
:mod:`afkak.records.gc_pause`).

Cython rather than C through a binding: the loop touches Python objects on
every field (bytes, tuples, ints), which Cython writes with the reference
counting done for us, and it needs no runtime dependency.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyTypeObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_SET_ITEM
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport int64_t, uint64_t
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


cdef object _headers(const unsigned char *buf, Py_ssize_t size, Py_ssize_t *pos):
    """Decode a record's headers (count included); None means "too big for 64 bits"."""
    cdef int64_t count = 0, n = 0, i
    cdef int rc
    cdef Py_ssize_t p = pos[0]
    rc = _varint(buf, size, &p, &count)
    if rc == TOO_BIG:
        return None
    if rc:
        _fail(rc, p)
    if count < 0:
        raise DecodeError(f"negative header count {count}", offset=p)
    out = []
    i = 0
    while i < count:
        rc = _varint(buf, size, &p, &n)
        if rc == TOO_BIG:
            return None
        if rc:
            _fail(rc, p)
        if n < 0 or n > size - p:
            raise DecodeError(f"bad header key length {n}", offset=p)
        key = PyUnicode_DecodeUTF8(<const char *>buf + p, <Py_ssize_t>n, NULL)
        p += n
        rc = _varint(buf, size, &p, &n)
        if rc == TOO_BIG:
            return None
        if rc:
            _fail(rc, p)
        if n < -1:
            raise DecodeError(f"negative length {n}", offset=p)
        if n == -1:
            out.append((key, None))
        else:
            if n > size - p:
                raise DecodeError("header value runs past the end", offset=p)
            out.append((key, _blob(buf, p, n)))
            p += n
        i += 1
    pos[0] = p
    return tuple(out)


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
    cdef Py_ssize_t end, start, i
    cdef int64_t length = 0, delta = 0
    cdef int64_t off = 0, ts = 0
    cdef int rc
    cdef object key, value, headers
    cdef list out = []
    for i in range(count):
        # length (-1 and below can never match the record's end)
        rc = _varint(buf, size, &pos, &length)
        if rc:
            if rc == TOO_BIG:
                return None
            _fail(rc, pos)
        start = pos
        end = pos + length if -1 <= length <= size else -2
        pos += 1  # attributes, unused
        # timestamp and offset deltas
        rc = _varint(buf, size, &pos, &delta)
        if rc == 0 and afkak_add_overflows(base_ts, delta, &ts):
            rc = TOO_BIG
        if rc == 0:
            rc = _varint(buf, size, &pos, &delta)
            if rc == 0 and afkak_add_overflows(base_offset, delta, &off):
                rc = TOO_BIG
        if rc:
            if rc == TOO_BIG:
                return None
            _fail(rc, pos)
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

    Compiled twin of ``afkak.message_set._wrap_records``: each message gets
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


def encode_records(values, keys, timestamps, base):
    """The records section of a batch without headers; None to leave it to the reference.

    Compiled twin of ``afkak.records.builder._encode_common`` /
    ``_encode_each`` for records without headers: *values* and *keys* (None:
    all null) hold bytes or None; each record's timestamp delta is its
    *timestamps* entry minus *base* (None: all 0).  Anything else (bytearray,
    memoryview, a wrong type, a number beyond 64 bits) returns None.
    """
    cdef Py_ssize_t n = len(values), i, total = 0, size, part
    cdef int64_t delta = 0, stamp, base_ts = 0
    cdef int overflow = 0
    if (keys is not None and len(keys) != n) or (
        timestamps is not None and len(timestamps) != n
    ):
        return None
    cdef list vals = list(values)
    cdef list ks = None if keys is None else list(keys)
    cdef list ds = None if timestamps is None else list(timestamps)
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
            size = 1 + _zz_size(delta) + _zz_size(i) + 1  # attributes ... header count
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
            out[0] = 0  # no headers
            out += 1
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
    static int afkak_track_list(PyObject *o, void *arg) {
        if (PyList_CheckExact(o) && !PyObject_GC_IsTracked(o))
            PyObject_GC_Track(o);
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
    """
    void afkak_untrack(object o)
    void afkak_track(object o)

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
