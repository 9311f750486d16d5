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


# ---- through a validating Unbound: the bits and signatures a client asks for ----

HUGE = " ".join(f'"{c * 200}"' for c in "abcd")      # an RRset near 1 KiB, with its RRSIG over it


def validating_upstream(inrpd_factory, tmp_path, unbound, edns_udp_size=None):  # noqa: F811
    """A validating Unbound whose only data is the signed zone, taken as if
    from upstream (so validated, against the zone's own KSK as its trust
    anchor), with tampered.ZONE's A changed after signing (bogus); and an
    inrpd with it as its upstream."""
    d = tmp_path / "zone"
    d.mkdir()
    (d / "zone").write_text(ZONE_TEXT + f"tampered IN A 192.0.2.66\nhuge IN TXT {HUGE}\n")

    def run(*args):
        r = subprocess.run(args, cwd=d, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()
    ksk = run("ldns-keygen", "-a", "ECDSAP256SHA256", "-k", ZONE)
    zsk = run("ldns-keygen", "-a", "ECDSAP256SHA256", ZONE)
    run("ldns-signzone", "-f", "zone.signed", "zone", ksk, zsk)
    signed = d / "zone.signed"
    text = signed.read_text()
    assert "192.0.2.66" in text
    signed.write_text(text.replace("192.0.2.66", "192.0.2.99"))
    u = unbound([], extra=["module-config: \"validator iterator\"", f'trust-anchor-file: "{d / ksk}.key"',
                           "val-log-level: 2", "auth-zone:", f'  name: "{ZONE}"', f'  zonefile: "{signed}"',
                           "  for-downstream: no", "  for-upstream: yes", "  fallback-enabled: no"])
    body = f"upstream {u.addr} port {u.port};\n"
    if edns_udp_size:
        body += f"edns-udp-size {edns_udp_size};\n"
    return u, router(inrpd_factory, tmp_path, body)


def query(addr, port, name, rdtype, payload=4096, do=True, cd=False, ad=False, edns=True):
    """The answer over UDP, its size as it came; never larger than the payload asked."""
    q = dns.message.make_query(name, rdtype, use_edns=0 if edns else None, payload=payload, want_dnssec=do)
    q.flags |= (dns.flags.CD if cd else 0) | (dns.flags.AD if ad else 0)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(5)
        s.sendto(q.to_wire(), (addr, port))
        raw = s.recv(65535)
    assert len(raw) <= (payload if edns else 512)
    return dns.message.from_wire(raw), len(raw)


def rrsigs(m):
    return sorted(str(r.name) for s in (m.answer, m.authority) for r in s if r.rdtype == dns.rdatatype.RRSIG)


FLAGS = dns.flags.AD | dns.flags.CD | dns.flags.TC


@pytest.mark.parametrize("do, ad", [(True, False), (False, True), (False, False)])
def test_ad_of_a_validated_answer_reaches_the_client(inrpd_factory, tmp_path, unbound, do, ad):  # noqa: F811
    """AD is set by the validator where the client asked with DO or AD
    (RFC 6840 5.7), and inrpd relays exactly that, for an answer and a
    signed NXDOMAIN alike, twice (the second from inrpd's cache)."""
    u, d = validating_upstream(inrpd_factory, tmp_path, unbound)
    for name in ("www." + ZONE, "nothing." + ZONE):
        theirs, _ = query(u.addr, u.port, name, "A", do=do, ad=ad)
        assert bool(theirs.flags & dns.flags.AD) == (do or ad)
        for _ in range(2):
            ours, _ = query(d.addr, d.port, name, "A", do=do, ad=ad)
            assert ours.rcode() == theirs.rcode()
            assert ours.flags & FLAGS == theirs.flags & FLAGS
            assert sections(ours) == sections(theirs)


def test_cd_is_passed_and_honoured(inrpd_factory, tmp_path, unbound):  # noqa: F811
    """A bogus answer (its A changed after signing): SERVFAIL without CD,
    the data, unvalidated (no AD), with CD; in either order, neither
    answer served from inrpd's cache to the other kind of query."""
    u, d = validating_upstream(inrpd_factory, tmp_path, unbound)
    name = "tampered." + ZONE
    for cd in (False, True, False, True):
        theirs, _ = query(u.addr, u.port, name, "A", cd=cd)
        ours, _ = query(d.addr, d.port, name, "A", cd=cd)
        want = dns.rcode.NOERROR if cd else dns.rcode.SERVFAIL
        assert theirs.rcode() == want and ours.rcode() == want, (cd, ours)
        assert ours.flags & FLAGS == theirs.flags & FLAGS
        assert not ours.flags & dns.flags.AD
        assert bool(ours.flags & dns.flags.CD) == cd
        if cd:
            assert [rd.address for rd in ours.answer[0]] == ["192.0.2.99"]
            assert rrsigs(ours) == rrsigs(theirs) == ["tampered." + ZONE]


def test_rrsigs_with_do_and_none_without(inrpd_factory, tmp_path, unbound):  # noqa: F811
    u, d = validating_upstream(inrpd_factory, tmp_path, unbound)
    for do in (True, False, True):
        for name, rdtype in (("www." + ZONE, "A"), ("nothing." + ZONE, "A"), ("ns." + ZONE, "A")):
            theirs, _ = query(u.addr, u.port, name, rdtype, do=do)
            ours, _ = query(d.addr, d.port, name, rdtype, do=do)
            assert rrsigs(ours) == rrsigs(theirs)
            assert bool(rrsigs(ours)) == do
            assert sections(ours) == sections(theirs)
            assert bool(ours.opt and ours.ednsflags & dns.flags.DO) == do


@pytest.mark.parametrize("inrpd_max", [1232, 900])
def test_tc_exactly_where_the_upstreams_answer_does_not_fit(inrpd_factory, tmp_path, unbound, inrpd_max):  # noqa: F811
    """The client's EDNS size varied around each answer's size: inrpd sets
    TC exactly where Unbound's own answer to that size, capped at inrpd's
    edns-udp-size, has it; an answer without TC is Unbound's, whole."""
    u, d = validating_upstream(inrpd_factory, tmp_path, unbound, edns_udp_size=inrpd_max)
    cases = [("www." + ZONE, "A"), ("nothing." + ZONE, "A"), ("big." + ZONE, "TXT"), ("huge." + ZONE, "TXT")]
    seen = {False: 0, True: 0}
    for name, rdtype in cases:
        _, full = query(u.addr, u.port, name, rdtype)
        for payload in sorted({512, full - 1, full, full + 1, inrpd_max - 1, inrpd_max, inrpd_max + 1, 4096}):
            if payload < 512:
                continue
            theirs, _ = query(u.addr, u.port, name, rdtype, payload=min(payload, inrpd_max))
            ours, our_len = query(d.addr, d.port, name, rdtype, payload=payload)
            tc = bool(theirs.flags & dns.flags.TC)
            assert bool(ours.flags & dns.flags.TC) == tc, (name, payload, full, our_len)
            assert our_len <= min(payload, inrpd_max)
            seen[tc] += 1
            if not tc:
                assert sections(ours) == sections(theirs)
                assert rrsigs(ours) == rrsigs(theirs)
    assert seen[True] and seen[False]
