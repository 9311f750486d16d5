"""Test-only signing of NBRP routes (docs/NBRP.md, Attestations;
docs/SIGNATURES.md): keys, trust-anchor files and attestations built from
the documents with Python's cryptography (Ed25519) and hashlib (BLAKE2b),
so the tests share no code with lib/nbrp/attest.c or lib/sig/trust.c."""

import base64
import hashlib
import os
import struct
import time

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from fibchan_client import _int_field, _len_field, wire_name
import nbrp_client as nc

RAW = serialization.Encoding.Raw


class Key:
    def __init__(self, seed=None):
        self.sk = Ed25519PrivateKey.from_private_bytes(seed) if seed else Ed25519PrivateKey.generate()
        self.pk = self.sk.public_key().public_bytes(RAW, serialization.PublicFormat.Raw)
        self.text = base64.b64encode(self.pk).decode()

    def sign(self, msg):
        return self.sk.sign(msg)

    def write(self, path, mode=0o600):
        seed = self.sk.private_bytes(RAW, serialization.PrivateFormat.Raw, serialization.NoEncryption())
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "w") as f:
            f.write(f"ed25519-seed {base64.b64encode(seed).decode()}\ned25519-public {self.text}\n")
        os.chmod(path, mode)


def tag(text):
    return text.encode().ljust(16, b"\0")


_serial = [int(time.time())]


def trust_file(path, anchor, routers, origins, valid_from="2020-01-01T00:00:00Z",
               valid_until="2099-01-01T00:00:00Z", serial=None):
    """routers: {name: Key}; origins: [(suffix, Key)]; signed by anchor.  serial: by default
    one more than the last file's (a router takes only a newer file); returns it."""
    if serial is None:
        _serial[0] += 1
        serial = _serial[0]
    body = f"# test trust anchors\nserial {serial}\nvalid-from {valid_from}\nvalid-until {valid_until}\n"
    body += "".join(f"router {n} {k.text}\n" for n, k in routers.items())
    body += "".join(f"origin {s} {k.text}\n" for s, k in origins)
    sig = anchor.sign(tag("NBRPv1 trust") + body.encode())
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        f.write(body + f"signature {base64.b64encode(sig).decode()}\n")
    os.replace(tmp, path)
    return serial


def link(msg, sig):
    return hashlib.blake2b(msg + sig, digest_size=32).digest()


def member_digest(members):
    """An aggregate's member digest, and a name set's digest (the same)."""
    return wire_digest([wire_name(m) for m in members])


def wire_digest(wires):
    h = hashlib.blake2b(tag("NBRPv1 members"), digest_size=32)
    for w in sorted(wires):
        h.update(w)
    return h.digest()


def origin_message(origin, first, timestamp, expiry, name, aggregate=None, version=0, digest=None, origin_seq=0,
                   source=""):
    """The bytes an origin signs; name a list: a name set's (digest over its names).  An
    aggregate's (subject 4) ends with its transfer source, "ADDRESS PORT", after its length."""
    msg = tag("NBRPv1 origin") + origin.pk + first + struct.pack(">QQQ", timestamp, expiry, origin_seq)
    if isinstance(name, (list, tuple)):
        return msg + bytes([3]) + digest
    msg += bytes([4 if aggregate else 1]) + wire_name(name)
    if aggregate:
        msg += struct.pack(">I", version) + digest + bytes([len(source)]) + source.encode()
    return msg


def attestation(sig, expiry, signer=b"", timestamp=0, for_key=b""):
    body = _len_field(1, signer) if signer else b""
    body += _len_field(2, sig)
    body += _int_field(3, timestamp) if timestamp else b""
    body += _int_field(4, expiry)
    body += _len_field(6, for_key) if for_key else b""
    return body


def signed_route(name, next_hop, port, path, keys, origin, receiver, load_ms=0, expiry=None, timestamp=None,
                 aggregate=None, version=0, source="", digest=None, others=(), origin_seq=0, signed_source=None):
    """A Route for `name` with path (the sender first), every hop signed by
    keys[router] for the next one, the last for `receiver` (a Key), and the
    origin attestation by `origin` (a Key).  `name` a list: a signed name
    set of those names and `others` (the set's names this Route is not
    for), its digest in field 10 and the others in field 11.  Returns
    (route bytes, atts) where atts is the list of attestation bodies (to
    tamper with).  An aggregate's origin signs signed_source (default: source, the one
    announced), sent in field 13."""
    signed_source = source if signed_source is None else signed_source
    now = int(time.time())
    expiry = now + 3600 if expiry is None else expiry
    timestamp = now if timestamp is None else timestamp
    first = keys[path[-1]].pk if path else receiver.pk
    if isinstance(name, (list, tuple)) and digest is None:
        digest = member_digest(list(name) + list(others))
    msg = origin_message(origin, first, timestamp, expiry, name, aggregate, version, digest, origin_seq,
                         signed_source)
    sig = origin.sign(msg)
    atts = [attestation(sig, expiry, signer=origin.pk, timestamp=timestamp)]
    prev = link(msg, sig)
    for i in range(len(path) - 1, -1, -1):
        signer = keys[path[i]]
        target = keys[path[i - 1]].pk if i > 0 else receiver.pk
        msg = tag("NBRPv1 hop") + prev + struct.pack(">Q", expiry) + signer.pk + target
        sig = signer.sign(msg)
        atts.insert(0, attestation(sig, expiry, for_key=target[:4]))
        prev = link(msg, sig)
    return route_with(name, next_hop, port, path, atts, load_ms, aggregate, version, source, digest, others,
                      origin_seq, signed_source), atts


def route_with(name, next_hop, port, path, atts, load_ms=0, aggregate=None, version=0, source="", digest=None,
               others=(), origin_seq=0, signed_source=None):
    names = list(name) if isinstance(name, (list, tuple)) else [name]
    body = nc.route(names, next_hop, port, path, load_ms=load_ms, aggregate=aggregate, version=version,
                    source=source, origin_seq=origin_seq)
    body += b"".join(_len_field(9, a) for a in atts)
    if digest is not None:
        body += _len_field(10, digest)
    body += b"".join(_len_field(11, wire_name(n)) for n in others)
    if aggregate is not None:
        body += _len_field(13, (source if signed_source is None else signed_source).encode())
    return body


def parse_route(body):
    """A Route's fields: names, path, attestations (dicts by field number), digest, set_others, origin_seq."""
    f = nc.fields(body)
    return {"names": [v for k, v in f if k == 1], "path": [v.decode() for k, v in f if k == 4],
            "origin_seq": next((v for k, v in f if k == 12), 0),
            "atts": [dict(nc.fields(v)) for k, v in f if k == 9],
            "digest": next((v for k, v in f if k == 10), None), "others": [v for k, v in f if k == 11]}


def verify(body, keys, receiver):
    """Checks every signature of a received Route (not an aggregate's) as
    docs/NBRP.md says, for `receiver` (a Key), with keys[router] the trust
    file's keys; raises on any failure.  Returns the parsed Route."""
    r = parse_route(body)
    path, atts, n = r["path"], r["atts"], len(r["path"])
    assert len(atts) == n + 1, "not one attestation per router and the origin's"
    o = atts[n]
    first = keys[path[-1]].pk if n else receiver.pk
    if r["digest"] is not None:
        assert len(set(r["names"] + r["others"])) == len(r["names"]) + len(r["others"]), "a name twice"
        assert wire_digest(r["names"] + r["others"]) == r["digest"], "member digest mismatch"
        subject = bytes([3]) + r["digest"]
    else:
        assert len(r["names"]) == 1 and not r["others"]
        subject = bytes([1]) + r["names"][0]
    msg = tag("NBRPv1 origin") + o[1] + first + struct.pack(">QQQ", o.get(3, 0), o.get(4, 0), r["origin_seq"]) + subject
    Ed25519PublicKey.from_public_bytes(o[1]).verify(o[2], msg)
    prev = link(msg, o[2])
    for i in range(n - 1, -1, -1):
        a, signer = atts[i], keys[path[i]].pk
        target = keys[path[i - 1]].pk if i else receiver.pk
        assert a[6] == target[:4], "for_key not the next router's"
        msg = tag("NBRPv1 hop") + prev + struct.pack(">Q", a.get(4, 0)) + signer + target
        Ed25519PublicKey.from_public_bytes(signer).verify(a[2], msg)
        prev = link(msg, a[2])
    return r


def withdrawal_message(signer_pk, origin_seq, expiry, name):
    """The bytes an origin signs to withdraw its announcements of name up to origin_seq."""
    return tag("NBRPv1 withdraw") + signer_pk + struct.pack(">QQ", origin_seq, expiry) + wire_name(name)


def signed_withdrawal(name, origin, origin_seq, key, expiry=None, signer=None):
    """An OriginWithdrawal's bytes signed by key (a Key); signer: the key it claims (default key's)."""
    expiry = int(time.time()) + 3600 if expiry is None else expiry
    pk = (signer or key).pk
    sig = key.sign(withdrawal_message(pk, origin_seq, expiry, name))
    return nc.origin_withdrawal(name, origin, origin_seq) + _len_field(4, pk) + _len_field(5, sig) + \
        _int_field(6, expiry)


def verify_withdrawal(fields, key):
    """Checks a received OriginWithdrawal's (nc.fields of it) signature by key; returns its fields by number."""
    f = dict(fields)
    assert f[4] == key.pk, "signed by another key"
    Ed25519PublicKey.from_public_bytes(f[4]).verify(f[5], tag("NBRPv1 withdraw") + f[4] +
                                                    struct.pack(">QQ", f[3], f[6]) + f[1])
    return f
