"""Relayed answers as small as the upstream's: a zone signed here
(ldns-signzone), served by a real Unbound (auth-zone), asked through
inrpd's fallback with EDNS 512 and DO.  A signed CNAME chain and an
NSEC-proven NXDOMAIN fit in 512 bytes only with their names compressed;
inrpd must relay them whole where Unbound answers them whole, and truncate
only where Unbound does."""

import socket
import subprocess

import dns.edns
import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype
import pytest

from test_inrpd_forward import router, unbound  # noqa: F401  (unbound: a fixture)

ZONE = "sig.example."
ZONE_TEXT = f"""$ORIGIN {ZONE}
$TTL 300
@ IN SOA ns.{ZONE} hostmaster.{ZONE} 1 3600 600 86400 300
@ IN NS ns.{ZONE}
ns IN A 192.0.2.53
www IN CNAME web.{ZONE}
web IN CNAME origin.{ZONE}
origin IN A 192.0.2.80
big IN TXT "{'x' * 200}" "{'y' * 200}"
"""


def signed_zone(tmp_path):
    """The zone signed with NSEC under a fresh KSK and ZSK (ECDSA P-256); its path."""
    d = tmp_path / "zone"
    d.mkdir()
    (d / "zone").write_text(ZONE_TEXT)

    def run(*args):
        r = subprocess.run(args, cwd=d, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()
    ksk = run("ldns-keygen", "-a", "ECDSAP256SHA256", "-k", ZONE)
    zsk = run("ldns-keygen", "-a", "ECDSAP256SHA256", ZONE)
    run("ldns-signzone", "-f", "zone.signed", "zone", ksk, zsk)
    return d / "zone.signed"


def ask(addr, port, name, rdtype, cookie=None):
    """The answer over UDP to EDNS 512 with DO (and a client cookie), and its size as it came."""
    options = [dns.edns.GenericOption(dns.edns.COOKIE, cookie)] if cookie else []
    q = dns.message.make_query(name, rdtype, use_edns=0, payload=512, want_dnssec=True, options=options)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(5)
        s.sendto(q.to_wire(), (addr, port))
        raw = s.recv(65535)
    assert len(raw) <= 512
    return dns.message.from_wire(raw), len(raw)


def uncompressed_len(m):
    """What the message would take with no name compressed at all."""
    n = 12 + len(m.question[0].name.to_wire()) + 4 + 11
    for section in (m.answer, m.authority):
        for rrset in section:
            for rd in rrset:
                n += len(rrset.name.to_wire()) + 10 + len(rd.to_wire())
    return n


def sections(m):
    return [sorted((str(r.name).lower(), r.rdtype) for r in s) for s in (m.answer, m.authority)]


def signed_upstream(inrpd_factory, tmp_path, unbound):  # noqa: F811
    zone = signed_zone(tmp_path)
    u = unbound([], extra=["auth-zone:", f'  name: "{ZONE}"', f'  zonefile: "{zone}"',
                           "  for-downstream: yes", "  for-upstream: no"])
    return u, router(inrpd_factory, tmp_path, f"upstream {u.addr} port {u.port};\n")


@pytest.mark.parametrize("name, rdtype, rcode", [
    ("www." + ZONE, "A", dns.rcode.NOERROR),           # CNAME, CNAME, A, each with its RRSIG
    ("nothing." + ZONE, "A", dns.rcode.NXDOMAIN),      # SOA and two NSECs, each with its RRSIG
    ("big." + ZONE, "TXT", dns.rcode.NOERROR),         # too big for 512 from Unbound too
])
def test_signed_answers_are_truncated_only_where_the_upstream_truncates(
        inrpd_factory, tmp_path, unbound, name, rdtype, rcode):  # noqa: F811
    u, d = signed_upstream(inrpd_factory, tmp_path, unbound)
    theirs, their_len = ask(u.addr, u.port, name, rdtype)
    ours, our_len = ask(d.addr, d.port, name, rdtype)
    assert theirs.rcode() == rcode
    assert ours.rcode() == theirs.rcode()
    assert bool(ours.flags & dns.flags.TC) == bool(theirs.flags & dns.flags.TC)
    assert our_len <= their_len
    assert sections(ours) == sections(theirs)
    if not theirs.flags & dns.flags.TC:
        signed = [r for s in (ours.answer, ours.authority) for r in s if r.rdtype == dns.rdatatype.RRSIG]
        assert len(signed) == 3
        # the case that matters: whole only because its names are compressed
        assert uncompressed_len(theirs) > 512


@pytest.mark.parametrize("name", ["www." + ZONE, "nothing." + ZONE])
def test_a_client_cookie_costs_exactly_our_cookie_option(inrpd_factory, tmp_path, unbound, name):  # noqa: F811
    """Unbound 1.17 does not answer cookies; inrpd does (RFC 7873), and its
    COOKIE option (client and server cookie, 28 bytes) is the only byte it
    adds: the 420-byte chain still fits 512, the 497-byte NXDOMAIN does not
    and comes with TC, as it would from any server that answers cookies."""
    u, d = signed_upstream(inrpd_factory, tmp_path, unbound)
    cookie = bytes(range(8))
    theirs, their_len = ask(u.addr, u.port, name, "A", cookie)
    ours, our_len = ask(d.addr, d.port, name, "A", cookie)
    assert not theirs.flags & dns.flags.TC
    assert [o.otype for o in ours.options] == [dns.edns.COOKIE]
    assert ours.options[0].data[:8] == cookie and len(ours.options[0].data) == 24
    if their_len + 28 <= 512:
        assert not ours.flags & dns.flags.TC
        assert our_len == their_len + 28
        assert sections(ours) == sections(theirs)
    else:
        assert ours.flags & dns.flags.TC
        assert ours.answer == [] and ours.authority == []
