"""The DNS codec: queries and answers round-trip, and no bytes make it raise."""

from __future__ import annotations

import random
import struct

from lmc_runtime.egress.dnswire import (
    AAAA,
    NOERROR,
    NXDOMAIN,
    A,
    build_query,
    build_response,
    parse_query,
    parse_response,
    rcode_only,
)


def test_a_query_round_trips_through_an_answer() -> None:
    raw = build_query(0x1234, "Files.PythonHosted.org.", A)
    assert raw is not None
    query = parse_query(raw)
    assert query is not None
    assert (query.id, query.name, query.qtype, query.opcode) == (
        0x1234,
        "files.pythonhosted.org",
        A,
        0,
    )
    answer = build_response(
        query, NOERROR, ["151.101.0.223", "2a04:4e42::223", "151.101.64.223"], 30
    )
    assert parse_response(answer, 0x1234, A) == (
        NOERROR,
        False,
        ["151.101.0.223", "151.101.64.223"],
    )
    assert parse_response(answer, 0x1234, AAAA) == (NOERROR, False, [])
    assert parse_response(answer, 0x9999, A) is None  # not the answer to that query
    assert parse_query(answer) is None  # an answer is no query


def test_nxdomain_and_rcode_only() -> None:
    raw = build_query(7, "secret.evil.example", AAAA)
    assert raw is not None
    query = parse_query(raw)
    assert query is not None
    assert parse_response(build_response(query, NXDOMAIN, [], 30), 7, AAAA) == (NXDOMAIN, False, [])
    refused = rcode_only(raw, 5)
    assert refused is not None and struct.unpack_from("!H", refused, 2)[0] & 0xF == 5
    assert rcode_only(b"short", 5) is None


def test_long_answers_are_truncated_to_the_limit() -> None:
    raw = build_query(1, "many.example", A)
    assert raw is not None
    query = parse_query(raw)
    assert query is not None
    many = [f"151.101.{i // 250}.{i % 250 + 1}" for i in range(100)]
    answer = build_response(query, NOERROR, many, 30, limit=512)
    assert len(answer) <= 512
    rcode, truncated, found = parse_response(answer, 1, A) or (None, None, None)
    assert truncated and rcode == NOERROR and found and len(found) < 100


def test_compression_loops_and_bad_names_are_refused() -> None:
    header = struct.pack("!HHHHHH", 1, 0x0100, 1, 0, 0, 0)
    loop = header + b"\xc0\x0c" + struct.pack("!HH", A, 1)  # points at itself
    assert parse_query(loop) is None
    long_name = header + b"\x3f" + b"a" * 63 + b"\x3f" + b"a" * 63 + b"\x3f" + b"a" * 63
    long_name += b"\x3f" + b"a" * 63 + b"\x00" + struct.pack("!HH", A, 1)
    assert parse_query(long_name) is None  # longer than 255
    two_questions = (
        struct.pack("!HHHHHH", 1, 0x0100, 2, 0, 0, 0) + b"\x00" + struct.pack("!HH", A, 1) * 2
    )
    assert parse_query(two_questions) is None
    assert build_query(1, "a" * 64 + ".example", A) is None


def test_random_bytes_never_raise() -> None:
    rng = random.Random(30)
    seeds = [build_query(5, "pypi.org", A) or b""]
    query = parse_query(seeds[0])
    assert query is not None
    seeds.append(build_response(query, NOERROR, ["151.101.0.223"], 30))
    for _ in range(20000):
        if rng.random() < 0.5:
            data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 80)))
        else:
            data = bytearray(rng.choice(seeds))
            for _ in range(rng.randrange(1, 6)):
                data[rng.randrange(len(data))] = rng.getrandbits(8)
            data = bytes(data[: rng.randrange(len(data) + 1)])
        parse_query(data)
        parse_response(data, 5, A)
        rcode_only(data, 1)
