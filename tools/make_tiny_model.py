#!/usr/bin/env python3
"""Generate the tiny deterministic embedding model that kb-embed's tests load.

The output is a BERT-shaped ONNX model plus the four tokenizer files that fastembed's
`UserDefinedEmbeddingModel` reads, so the tests exercise the real path (tokenizers,
ONNX Runtime, mean pooling, normalisation) in milliseconds instead of loading a 90 MB model.

  inputs : input_ids, attention_mask, token_type_ids   int64   [batch, seq]
  output : last_hidden_state                           float32 [batch, seq, 64]

The graph is `(word_embeddings[input_ids] + type_embeddings[token_type_ids]) * attention_mask`.
Every token's vector is derived from a hash of the token's text alone (SHAKE-256, no random
generator, so neither the Python nor the numpy version matters and adding a token never
changes the others). Word vectors are unit length and close to orthogonal in 64 dimensions,
so after mean pooling two texts are similar exactly as far as they share words: enough to
test ranking, nothing like a real model. [CLS], [SEP], [MASK] and [UNK] get short vectors
(every text has the first two, and unknown words must not make texts alike), suffix pieces such as ##s and ##ing get
medium-length ones (so `tests` is close to `test`), and [PAD] is zero.

The vocabulary is a WordPiece one: the special tokens, punctuation, digits, a few hundred
English words common in developer notes (stems only; inflections come from ## suffixes) and
a few hundred frequent Chinese characters, which BERT's normaliser splits one per token.

Regenerate (needs `pip install onnx numpy`; onnxruntime, if installed, is used for a
self-check) and commit the result:

  python3 tools/make_tiny_model.py            # writes crates/kb-embed/tests/fixtures/tiny-model/
  python3 tools/make_tiny_model.py --out DIR  # somewhere else

The output is byte-for-byte the same on every run; change TOKEN_SEED or the lists below
to get a different model (and expect the tests' expectations to need a look).
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DIM = 64
TOKEN_SEED = b"knowhub tiny model v1\0"
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SHORT_SPECIALS = {"[UNK]": 0.05, "[CLS]": 0.05, "[SEP]": 0.05, "[MASK]": 0.05}
SUFFIX_LENGTH = 0.35
MAX_LENGTH = 256

PUNCTUATION = list(".,:;!?-_/()[]{}'\"`=+*#@$%&<>|\\~^")
DIGITS = list("0123456789")
SUFFIXES = ["##s", "##es", "##ed", "##d", "##ing", "##er", "##ers", "##ly", "##ion", "##ions", "##ment"]

ENGLISH = """
a about add after again agent all always an and api app apt are argument array as ask async at
avoid await bad bash be because before best better big bin binary branch broken brew browser bug
build but by cache call can cannot cargo case change check chinese class clean cli client close
code command commit compile config connect container copy crash create data database date day
debug default delete dependency deploy directory disk do docker document done down download each
else embed empty end english env environment error every exit experience export fail false fast
feature file find first fix flag folder for format found from function get git good hang has have
header help high hook host how http https i if import in index input install instead into is issue
it javascript jest json key kill language large last latency leak library line link lint list load
local lock log long loop low main make map memory merge method missing mode model module more
my name need network never new no node not npm null number of off old on once only open option or
output over package page panic parse password patch path permission pip plugin port print problem
process prompt pull push python query quick read reason release remote remove request resource
response restart result retry return root run rust same save schema script search second secret
see send server service session set shell short should show slow small so socket some source
start status step stop store string sudo system table task terminal test text than that the then
there they this thread time timeout to token tool true tsconfig type typescript under update
upgrade url use user value variable vector version via vitest wait want warn was watch way we
when where which while why will window with without word work write wrong yaml yes you your
""".split()

CHINESE = list(
    "的一是不了在人有我他这个们中来上大为和国地到以说时要就出会可也你对生能而子那得于着下自之年过发后作里用道行所然"
    "家种事成方多经么去法学如都同现当没动面起看定天分还进好小部其些主样理心本前开但因只从想实日者意无力它与长把机"
    "测试运模式监视停止错误配置文件安装数据库搜索索引向量中文英语命令工具结果任务资源经验代码版本更新依赖网络超时"
    "慢快问题解决方案修复失败成功服务器客户端进程线程内存缓存日志调试发布部署提交分支合并路径目录权限密码令牌脚本"
)


def vocabulary():
    """Tokens in id order, without duplicates (the Chinese list repeats some characters)."""
    tokens = []
    seen = set()
    for token in SPECIAL_TOKENS + PUNCTUATION + DIGITS + SUFFIXES + ENGLISH + CHINESE:
        if token not in seen:
            seen.add(token)
            tokens.append(token)
    return tokens


def token_vector(token):
    """A unit vector in DIM dimensions that depends on the token's text and TOKEN_SEED only."""
    raw = hashlib.shake_256(TOKEN_SEED + token.encode("utf-8")).digest(4 * DIM)
    words = np.frombuffer(raw, dtype="<u4").astype(np.float64)
    uniform = words / 2.0**32 * 2.0 - 1.0  # in [-1, 1)
    return uniform / np.linalg.norm(uniform)


def embedding_table(tokens):
    table = np.zeros((len(tokens), DIM), dtype=np.float64)
    for token_id, token in enumerate(tokens):
        if token == "[PAD]":
            continue
        length = SHORT_SPECIALS.get(token, SUFFIX_LENGTH if token.startswith("##") else 1.0)
        table[token_id] = token_vector(token) * length
    return table.astype(np.float32)


def build_model(tokens):
    word_embeddings = numpy_helper.from_array(embedding_table(tokens), "word_embeddings")
    # Segment B gets a small constant offset; kb-embed only ever encodes single texts (segment A).
    type_table = np.zeros((2, DIM), dtype=np.float32)
    type_table[1] = token_vector("[segment B]").astype(np.float32) * 0.01
    type_embeddings = numpy_helper.from_array(type_table, "token_type_embeddings")
    last_axis = numpy_helper.from_array(np.array([-1], dtype=np.int64), "last_axis")

    nodes = [
        helper.make_node("Gather", ["word_embeddings", "input_ids"], ["words"], axis=0),
        helper.make_node("Gather", ["token_type_embeddings", "token_type_ids"], ["types"], axis=0),
        helper.make_node("Add", ["words", "types"], ["summed"]),
        helper.make_node("Cast", ["attention_mask"], ["mask_float"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_float", "last_axis"], ["mask_3d"]),
        helper.make_node("Mul", ["summed", "mask_3d"], ["last_hidden_state"]),
    ]
    int_input = lambda name: helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
    graph = helper.make_graph(
        nodes,
        "knowhub_tiny_embedder",
        [int_input("input_ids"), int_input("attention_mask"), int_input("token_type_ids")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", DIM])],
        initializer=[word_embeddings, type_embeddings, last_axis],
    )
    model = helper.make_model(
        graph,
        producer_name="knowhub tools/make_tiny_model.py",
        producer_version="1",
        opset_imports=[helper.make_opsetid("", 17)],
    )
    model.ir_version = 8  # old enough for any ONNX Runtime of the last years
    onnx.checker.check_model(model, full_check=True)
    return model


def tokenizer_json(tokens):
    ids = {token: token_id for token_id, token in enumerate(tokens)}
    special = lambda token: {
        "id": ids[token], "content": token, "single_word": False, "lstrip": False,
        "rstrip": False, "normalized": False, "special": True,
    }
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [special(token) for token in SPECIAL_TOKENS],
        "normalizer": {
            "type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
            "strip_accents": None, "lowercase": True,
        },
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
            ],
            "pair": [
                {"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
                {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                {"Sequence": {"id": "B", "type_id": 1}},
                {"SpecialToken": {"id": "[SEP]", "type_id": 1}},
            ],
            "special_tokens": {
                "[CLS]": {"id": "[CLS]", "ids": [ids["[CLS]"]], "tokens": ["[CLS]"]},
                "[SEP]": {"id": "[SEP]", "ids": [ids["[SEP]"]], "tokens": ["[SEP]"]},
            },
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {
            "type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": ids,
        },
    }


def side_files(tokens):
    specials = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]", "cls_token": "[CLS]",
                "mask_token": "[MASK]"}
    config = {
        "architectures": ["BertModel"], "model_type": "bert", "hidden_size": DIM, "vocab_size": len(tokens),
        "pad_token_id": 0, "max_position_embeddings": MAX_LENGTH, "type_vocab_size": 2,
        "_comment": "knowhub test fixture: an embedding lookup, not a trained model (tools/make_tiny_model.py)",
    }
    tokenizer_config = dict(specials, do_lower_case=True, tokenize_chinese_chars=True, strip_accents=None,
                            tokenizer_class="BertTokenizer", model_max_length=MAX_LENGTH)
    return {"config.json": config, "special_tokens_map.json": specials, "tokenizer_config.json": tokenizer_config}


def write_json(path, value):
    with open(path, "w", encoding="utf-8", newline="\n") as file:
        json.dump(value, file, ensure_ascii=False, indent=1)
        file.write("\n")


def self_check(out_dir, tokens):
    """Run the model once with onnxruntime, when it is installed, and check the output shape."""
    try:
        import onnxruntime
    except ImportError:
        print("onnxruntime not installed: skipped the self-check", file=sys.stderr)
        return
    session = onnxruntime.InferenceSession(os.path.join(out_dir, "model.onnx"), providers=["CPUExecutionProvider"])
    ids = np.array([[2, tokens.index("test"), 3, 0]], dtype=np.int64)
    mask = np.array([[1, 1, 1, 0]], dtype=np.int64)
    (hidden,) = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})
    assert hidden.shape == (1, 4, DIM), hidden.shape
    assert np.allclose(hidden[0, 1], token_vector("test"), atol=1e-6)
    assert not hidden[0, 3].any(), "padding must be zero"


def main():
    repo_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(repo_root, "crates", "kb-embed", "tests", "fixtures", "tiny-model"))
    args = parser.parse_args()

    tokens = vocabulary()
    os.makedirs(args.out, exist_ok=True)
    onnx.save(build_model(tokens), os.path.join(args.out, "model.onnx"))
    write_json(os.path.join(args.out, "tokenizer.json"), tokenizer_json(tokens))
    for name, value in side_files(tokens).items():
        write_json(os.path.join(args.out, name), value)
    with open(os.path.join(args.out, "README.md"), "w", encoding="utf-8", newline="\n") as readme:
        readme.write(
            "# tiny-model\n\n"
            "A test fixture, not a trained model: generated by `tools/make_tiny_model.py`, which says what it is\n"
            "and how to regenerate it. Do not edit these files by hand.\n"
        )
    self_check(args.out, tokens)
    total = sum(os.path.getsize(os.path.join(args.out, name)) for name in os.listdir(args.out))
    print(f"wrote {args.out}: {len(tokens)} tokens, {DIM} dimensions, {total} bytes")


if __name__ == "__main__":
    main()
