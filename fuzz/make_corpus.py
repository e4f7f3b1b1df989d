#!/usr/bin/env python3
"""Seed corpora for the fuzz harnesses, from the repository's test vectors.

usage: make_corpus.py ROOT OUT   writes OUT/<harness>/<n> (the directory is rebuilt)

  json_parse, json_canonical  tests/testdata/jcs inputs, examples/ manifests, the URL vectors file
  json_canonical              also CBOR values JSON cannot hold (NaN, bad UTF-8, binary, 2^64-1)
  url                         every input of tests/testdata/url/whatwg_vectors.json
  manifest                    examples/tools and examples/revisions
  arguments                   [parameters, arguments] from the examples and the draft-07 suite
                              (/usr/share/json-schema-test-suite, package json-schema-test-suite)
  frames                      child frames of every kind (sandbox/protocol.h), one per line
"""
import glob
import json
import os
import shutil
import sys

root, out = sys.argv[1], sys.argv[2]
corpora = {}


def add(harness, data):
    if isinstance(data, str):
        data = data.encode()
    corpora.setdefault(harness, []).append(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


json_files = sorted(glob.glob(f"{root}/tests/testdata/jcs/input/*.json")) + \
    sorted(glob.glob(f"{root}/examples/tools/*.json")) + sorted(glob.glob(f"{root}/examples/revisions/*.json"))
for path in json_files:
    add("json_parse", read(path))
    add("json_canonical", read(path))
for text in ['{"a":1,"a":2}', '[1e400]', '9007199254740993', '"\\ud800"', '1152921504606847000',
             '[' * 600 + ']' * 600, '{"\\u0000":-0.0}']:
    add("json_parse", text)
# 'c' + CBOR: NaN, invalid UTF-8 text, binary, 2^64-1, -2^64, nested arrays, a map with an int key.
for cbor in [b"\xf9\x7e\x00", b"\x62\xff\xfe", b"\x42\x01\x02", b"\x1b" + b"\xff" * 8, b"\x3b" + b"\xff" * 8,
             b"\x81" * 300 + b"\x00", b"\xa1\x01\x02", b"\xa2\x61a\x01\x61a\x02", b"\xfb\x7f\xf0" + b"\x00" * 6]:
    add("json_canonical", b"c" + cbor)

vectors = json.loads(read(f"{root}/tests/testdata/url/whatwg_vectors.json"))["vectors"]
for v in vectors:
    add("url", v["input"])

for path in sorted(glob.glob(f"{root}/examples/tools/*.json")) + sorted(glob.glob(f"{root}/examples/revisions/*.json")):
    add("manifest", read(path))
    manifest = json.loads(read(path))
    params = manifest.get("parameters", {"type": "object"})
    add("arguments", json.dumps([params, {}]))
    sample = {k: ("text" if s.get("type") == "string" else 2) for k, s in params.get("properties", {}).items()}
    add("arguments", json.dumps([params, sample]))

suite = "/usr/share/json-schema-test-suite/tests/draft7"
for path in sorted(glob.glob(f"{suite}/*.json")):
    for group in json.loads(read(path)):
        schema = group["schema"]
        for test in group["tests"][:2]:
            add("arguments", json.dumps([{"type": "object", "properties": {"v": schema}}, {"v": test["data"]}]))
add("arguments", json.dumps([{"type": "object", "properties": {"s": {"type": "string", "pattern": "^[a-z]+$"}}},
                             {"s": "abc"}]))

frames = [
    '{"type":"ready"}',
    '{"type":"load_error","message":"SyntaxError: x"}',
    '{"type":"log","id":1,"level":"info","text":"hello"}',
    '{"type":"result","id":1,"value":{"a":[1,2.5,"x",null,true]}}',
    '{"type":"result","id":1,"value":18446744073709551615}',
    '{"type":"error","id":1,"name":"TypeError","message":"boom"}',
    '{"type":"cap","id":1,"req":1,"op":"fetch","args":{"url":"https://example.com/","method":"GET","headers":[],"body":null}}',
    '{"type":"cap","id":1,"req":2,"op":"createSubtasksResult","args":{"drafts":[]}}',
    '{"type":"cap","id":1,"req":3,"op":"resolveInvocation","args":{"name":"add"}}',
    '{"type":"cap","id":1,"req":4,"op":"storage.get","args":{"key":"k"}}',
    '{"type":"cap","id":1,"req":5,"op":"storage.set","args":{"key":"k","value":[1]}}',
    '{"type":"cap","id":1,"req":6,"op":"storage.delete","args":{"key":"k"}}',
    '{"type":"cap","id":1,"req":7,"op":"storage.list","args":{"prefix":""}}',
]
for f in frames:
    add("frames", f + "\n")
add("frames", "\n".join(frames) + "\n")

for harness, items in corpora.items():
    d = os.path.join(out, harness)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for i, data in enumerate(items):
        if len(data) <= 64 * 1024:
            with open(os.path.join(d, f"seed-{i:04d}"), "wb") as f:
                f.write(data)
    print(f"corpus {harness}: {len(os.listdir(d))} seeds")
