#!/usr/bin/python3
"""Reads TensorBoard event files (events.out.tfevents.*) without TensorFlow or TensorBoard: checks
each record's TFRecord framing and masked CRC-32C, parses the Event protos with Python's protobuf
(python3-protobuf) against proto/event.proto, and prints the scalars as CSV (tag,step,value,
wall_time) or, with --summary, each tag's count, first and last value.

  scripts/read_events.py RUN/summaries/events.out.tfevents.*  [--summary]

Exit 2 with one line naming the file and the record's offset where a record is damaged."""
import argparse
import importlib.util
import os
import struct
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _crc_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


_TABLE = _crc_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


class DamagedRecord(Exception):
    pass


def records(path):
    """Yields (offset, bytes) of each record, checking both CRCs."""
    with open(path, "rb") as f:
        data = f.read()
    offset = 0
    while offset < len(data):
        if len(data) - offset < 12:
            raise DamagedRecord(f"{path}: record at byte {offset}: truncated header")
        (length,) = struct.unpack_from("<Q", data, offset)
        (length_crc,) = struct.unpack_from("<I", data, offset + 8)
        if masked_crc(data[offset:offset + 8]) != length_crc:
            raise DamagedRecord(f"{path}: record at byte {offset}: the length's CRC does not match")
        if len(data) - offset < 16 + length:
            raise DamagedRecord(f"{path}: record at byte {offset}: truncated data")
        body = data[offset + 12:offset + 12 + length]
        (body_crc,) = struct.unpack_from("<I", data, offset + 12 + length)
        if masked_crc(body) != body_crc:
            raise DamagedRecord(f"{path}: record at byte {offset}: the data's CRC does not match")
        yield offset, body
        offset += 16 + length


def event_module():
    """proto/event.proto compiled for Python by protoc, in a temporary folder, and loaded from
    there (it imports no other proto)."""
    out = tempfile.mkdtemp(prefix="cnnbench_event_pb2_")
    subprocess.run(["protoc", f"--proto_path={ROOT}", f"--python_out={out}", "proto/event.proto"], check=True)
    spec = importlib.util.spec_from_file_location("proto.event_pb2", os.path.join(out, "proto", "event_pb2.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_events(path, pb2=None):
    """[(wall_time, step, file_version or None, [(tag, value)...])] of every event in the file."""
    pb2 = pb2 or event_module()
    events = []
    for offset, body in records(path):
        e = pb2.Event()
        try:
            e.ParseFromString(body)
        except Exception as error:  # protobuf's DecodeError
            raise DamagedRecord(f"{path}: record at byte {offset}: not an Event ({error})")
        version = e.file_version if e.WhichOneof("what") == "file_version" else None
        values = [(v.tag, v.simple_value) for v in e.summary.value] if e.WhichOneof("what") == "summary" else []
        events.append((e.wall_time, e.step, version, values))
    return events


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+")
    p.add_argument("--summary", action="store_true", help="each tag's count, first and last value")
    a = p.parse_args()
    pb2 = event_module()
    try:
        for path in a.files:
            events = read_events(path, pb2)
            if a.summary:
                tags = {}
                for _, step, _, values in events:
                    for tag, value in values:
                        tags.setdefault(tag, []).append((step, value))
                print(f"{path}: {len(events)} events, file version {events[0][2] if events else 'none'}")
                for tag, points in sorted(tags.items()):
                    print(f"  {tag}: {len(points)} points, step {points[0][0]} = {points[0][1]:.6g} .. "
                          f"step {points[-1][0]} = {points[-1][1]:.6g}")
            else:
                print("tag,step,value,wall_time")
                for wall, step, _, values in events:
                    for tag, value in values:
                        print(f"{tag},{step},{value:.9g},{wall:.6f}")
    except (DamagedRecord, OSError) as error:
        print(f"read_events.py: {error}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
