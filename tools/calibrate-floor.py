#!/usr/bin/env python3
"""Measures where a model's relevance floor belongs (semantic::default_min_similarity).

For one model and one set of crates/kb-bench/data, through a real release daemon in vector mode:
the cosine of the labelled relevant item when it is in the top 10 (relevant), and the top-1
cosine of each question in crates/kb-bench/data/unrelated-queries.txt (unrelated). Prints their
percentiles. Needs `cargo build --release -p knowhubd`, tools/models.sh and python3's
onnxruntime (tests/run installs both).

    tools/calibrate-floor.py multilingual-e5-small-onnx english-experiences
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "crates", "kb-bench", "data")


def onnxruntime_library():
    import onnxruntime  # noqa: PLC0415 (only this tool needs it)

    capi = os.path.join(os.path.dirname(onnxruntime.__file__), "capi")
    return os.path.join(capi, next(name for name in os.listdir(capi) if name.startswith("libonnxruntime.so")))


def call(sock, method, params):
    connection = socket.socket(socket.AF_UNIX)
    connection.connect(sock)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    head = f"POST / HTTP/1.1\r\nHost: knowhub\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    connection.sendall(head.encode() + body)
    reader = connection.makefile("rb")
    length = 0
    while True:
        line = reader.readline()
        if line.lower().startswith(b"content-length"):
            length = int(line.split(b":")[1])
        if line in (b"\r\n", b""):
            break
    answer = json.loads(reader.read(length))
    connection.close()
    if "error" in answer:
        raise RuntimeError(answer["error"])
    return answer["result"]


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * share), len(ordered) - 1)]


def main():
    model, dataset = sys.argv[1], sys.argv[2]
    home = tempfile.mkdtemp(prefix="kb-floor-")
    # No floor at all, so that every cosine is seen.
    with open(os.path.join(home, "config.toml"), "w") as config:
        config.write("[embedding]\nmin_similarity = -1.0\n")
    env = dict(
        os.environ,
        KNOWHUB_HOME=home,
        KNOWHUB_MODEL_DIR=os.path.join(ROOT, ".cache", "models", model),
        ORT_DYLIB_PATH=onnxruntime_library(),
    )
    daemon = subprocess.Popen([os.path.join(ROOT, "target", "release", "knowhubd")], env=env,
                              stderr=open(os.path.join(home, "daemon.log"), "w"))
    sock = os.path.join(home, "knowhubd.sock")
    try:
        for _ in range(150):
            try:
                call(sock, "status", {})
                break
            except OSError:
                time.sleep(0.2)
        corpus = [json.loads(line) for line in open(os.path.join(DATA, dataset, "corpus.jsonl"))]
        queries = [json.loads(line) for line in open(os.path.join(DATA, dataset, "queries.jsonl"))]
        items = [
            {"task": row["text"], "resource": "doc", "result": "doc", "score": 3} if "text" in row else
            {"task": row["task"], "resource": row["resource"], "result": row["result"], "score": row.get("score", 3)}
            for row in corpus
        ]
        ids = []
        for start in range(0, len(items), 500):
            ids += call(sock, "kb.import", {"items": items[start:start + 500]})["ids"]
        label = {stored: row["id"] for stored, row in zip(ids, corpus)}
        while True:
            embedder = call(sock, "status", {})["embedder"]
            if embedder["state"] == "ready" and embedder["backlog"] == 0:
                break
            if embedder["state"] == "unavailable":
                raise RuntimeError(embedder)
            time.sleep(1)
        relevant = []
        for query in queries[:300]:
            hits = call(sock, "kb.search", {"query": query["text"], "mode": "vector", "top_k": 10, "min_score": 1})["results"]
            found = [hit["relevance"] for hit in hits if label.get(hit["id"]) in query["relevant"]]
            if found:
                relevant.append(found[0])
        unrelated = []
        for line in open(os.path.join(DATA, "unrelated-queries.txt")):
            if line.strip():
                hits = call(sock, "kb.search", {"query": line.strip(), "mode": "vector", "top_k": 1, "min_score": 1})["results"]
                unrelated.extend(hit["relevance"] for hit in hits)
    finally:
        daemon.terminate()
        daemon.wait()
    print(f"{model} {dataset}: relevant n={len(relevant)} p1 {percentile(relevant, .01):.3f} "
          f"p5 {percentile(relevant, .05):.3f} p50 {percentile(relevant, .5):.3f}")
    print(f"{model} {dataset}: unrelated top-1 n={len(unrelated)} p50 {percentile(unrelated, .5):.3f} "
          f"p90 {percentile(unrelated, .9):.3f} max {max(unrelated):.3f}")


if __name__ == "__main__":
    main()
