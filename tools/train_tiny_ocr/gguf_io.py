"""GGUF v3 reading and writing, from ../shared/spec/gguf.md; only what the trainer needs.

Reading: every metadata value type; tensor data of types F32, F16 and Q8_0 (the types this
package writes). Writing: the same. Q8_0 follows ggml's reference quantizer (block of 32, one f16
scale d = amax / 127, q = round(x / d)); what matters for parity is only that the reader's
dequantization (d * q) is the file's meaning, and both ckjit and the PyTorch side use that.
"""
import struct

import numpy as np

# metadata value types
U8, I8, U16, I16, U32, I32, F32V, BOOL, STRING, ARRAY, U64, I64, F64V = range(13)
_SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32V: "<f", BOOL: "<?",
           U64: "<Q", I64: "<q", F64V: "<d"}
_NP = {U8: np.uint8, I8: np.int8, U16: np.uint16, I16: np.int16, U32: np.uint32, I32: np.int32,
       F32V: np.float32, BOOL: np.bool_, U64: np.uint64, I64: np.int64, F64V: np.float64}

# tensor types
T_F32, T_F16, T_Q8_0 = 0, 1, 8
_TYPE_NAMES = {T_F32: "F32", T_F16: "F16", T_Q8_0: "Q8_0"}
QK8_0 = 32


class Value:
    """A typed metadata value: scalars, strings, or arrays (elem_type set, value a list)."""

    def __init__(self, vtype, value, elem_type=None):
        self.vtype, self.value, self.elem_type = vtype, value, elem_type

    def __repr__(self):
        return f"Value({self.vtype}, {self.value!r:.60})"


def u32(v): return Value(U32, int(v))
def f32(v): return Value(F32V, float(v))
def string(v): return Value(STRING, str(v))
def boolean(v): return Value(BOOL, bool(v))
def array(elem_type, values): return Value(ARRAY, list(values), elem_type)


class Reader:
    def __init__(self, path):
        with open(path, "rb") as f:
            self.buf = f.read()
        self.pos = 0
        if self.buf[:4] != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        self.pos = 4
        version, n_tensors, n_kv = self._unpack("<IQQ")
        if version != 3:
            raise ValueError(f"{path}: GGUF version {version}, want 3")
        self.kv = {}
        for _ in range(n_kv):
            key = self._string()
            (vtype,) = self._unpack("<I")
            self.kv[key] = self._value(vtype)
        self.tensors = {}
        infos = []
        for _ in range(n_tensors):
            name = self._string()
            (n_dims,) = self._unpack("<I")
            ne = list(self._unpack("<" + "Q" * n_dims))
            ttype, offset = self._unpack("<IQ")
            infos.append((name, ne, ttype, offset))
        align = self.kv["general.alignment"].value if "general.alignment" in self.kv else 32
        self.data_start = (self.pos + align - 1) // align * align
        for name, ne, ttype, offset in infos:
            self.tensors[name] = (ne, ttype, self.data_start + offset)

    def _unpack(self, fmt):
        vals = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return vals

    def _string(self):
        (n,) = self._unpack("<Q")
        s = self.buf[self.pos:self.pos + n].decode("utf-8")
        self.pos += n
        return s

    def _value(self, vtype):
        if vtype == STRING:
            return Value(STRING, self._string())
        if vtype == ARRAY:
            etype, n = self._unpack("<IQ")
            if etype == STRING:
                return Value(ARRAY, [self._string() for _ in range(n)], STRING)
            if etype == ARRAY:
                raise ValueError("nested arrays are not supported")
            dt = np.dtype(_NP[etype]).newbyteorder("<")
            vals = np.frombuffer(self.buf, dtype=dt, count=n, offset=self.pos)
            self.pos += n * dt.itemsize
            return Value(ARRAY, vals.tolist(), etype)
        (v,) = self._unpack(_SCALAR[vtype])
        return Value(vtype, v)

    def get(self, key, default=None):
        return self.kv[key].value if key in self.kv else default

    def tensor(self, name):
        """The tensor as float32, numpy shape = reversed GGUF ne (row-major: ne0 is the last axis)."""
        ne, ttype, start = self.tensors[name]
        n = int(np.prod(ne))
        if ttype == T_F32:
            a = np.frombuffer(self.buf, dtype="<f4", count=n, offset=start).astype(np.float32)
        elif ttype == T_F16:
            a = np.frombuffer(self.buf, dtype="<f2", count=n, offset=start).astype(np.float32)
        elif ttype == T_Q8_0:
            nb = n // QK8_0
            raw = np.frombuffer(self.buf, dtype=np.uint8, count=nb * 34, offset=start).reshape(nb, 34)
            d = raw[:, :2].copy().view("<f2").astype(np.float32)
            q = raw[:, 2:].copy().view(np.int8).astype(np.float32)
            a = (d * q).reshape(n)
        else:
            raise ValueError(f"tensor {name}: type {ttype} is not read here (F32, F16, Q8_0 are)")
        return a.reshape(list(reversed(ne)))


def quantize_q8_0(a):
    """float32 rows (last axis a multiple of 32) -> Q8_0 bytes, ggml's reference rounding."""
    x = np.ascontiguousarray(a, dtype=np.float32).reshape(-1, QK8_0)
    amax = np.abs(x).max(axis=1)
    d = amax / np.float32(127.0)
    inv = np.where(d != 0, np.float32(1.0) / np.where(d != 0, d, 1), np.float32(0.0)).astype(np.float32)
    # roundf: half away from zero
    q = np.trunc(x * inv[:, None] + np.copysign(np.float32(0.5), x * inv[:, None])).astype(np.int8)
    out = np.empty((x.shape[0], 34), dtype=np.uint8)
    out[:, :2] = d.astype("<f2").reshape(-1, 1).view(np.uint8)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


class Writer:
    """Collects metadata and tensors, then writes a GGUF v3 file (alignment 32)."""

    ALIGN = 32

    def __init__(self):
        self.kv = {}
        self.tensors = []  # (name, ne, ttype, bytes)

    def add_kv(self, key, value):
        self.kv[key] = value

    def add_tensor(self, name, array, ttype):
        """array: numpy, row-major; GGUF ne is its shape reversed."""
        a = np.ascontiguousarray(array, dtype=np.float32)
        ne = list(reversed(a.shape))
        if ttype == T_F32:
            data = a.astype("<f4").tobytes()
        elif ttype == T_F16:
            data = a.astype("<f2").tobytes()
        elif ttype == T_Q8_0:
            if ne[0] % QK8_0:
                raise ValueError(f"{name}: rows of {ne[0]} are not whole Q8_0 blocks")
            data = quantize_q8_0(a)
        else:
            raise ValueError(f"{name}: type {ttype} is not written here")
        self.tensors.append((name, ne, ttype, data))

    @staticmethod
    def _str(s):
        b = s.encode("utf-8")
        return struct.pack("<Q", len(b)) + b

    def _value(self, v):
        out = struct.pack("<I", v.vtype)
        if v.vtype == STRING:
            return out + self._str(v.value)
        if v.vtype == ARRAY:
            out += struct.pack("<IQ", v.elem_type, len(v.value))
            if v.elem_type == STRING:
                return out + b"".join(self._str(s) for s in v.value)
            return out + np.asarray(v.value, dtype=np.dtype(_NP[v.elem_type]).newbyteorder("<")).tobytes()
        return out + struct.pack(_SCALAR[v.vtype], v.value)

    def write(self, path):
        parts = [b"GGUF", struct.pack("<IQQ", 3, len(self.tensors), len(self.kv))]
        for key, v in self.kv.items():
            parts.append(self._str(key) + self._value(v))
        offset = 0
        offsets = []
        for name, ne, ttype, data in self.tensors:
            offsets.append(offset)
            parts.append(self._str(name) + struct.pack("<I", len(ne)) + struct.pack("<" + "Q" * len(ne), *ne) +
                         struct.pack("<IQ", ttype, offset))
            offset = (offset + len(data) + self.ALIGN - 1) // self.ALIGN * self.ALIGN
        head = b"".join(parts)
        with open(path, "wb") as f:
            f.write(head)
            f.write(b"\0" * ((-len(head)) % self.ALIGN))
            for (name, ne, ttype, data), off in zip(self.tensors, offsets):
                f.write(data)
                f.write(b"\0" * ((-len(data)) % self.ALIGN))
