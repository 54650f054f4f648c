"""Real ``tokenizers`` pipelines as the published model families lay them out, built with the
library's own API and trained in milliseconds on a few hundred lines: BERT (WordPiece), RoBERTa
(byte-level BPE with added tokens of every flag), Llama (▁ BPE with byte fallback, in both of its
published forms) and T5 (Unigram with a real SentencePiece ``nmt_nfkc`` Precompiled map).
A uniquely named helper module for the pipeline tests and the window's screenshots."""

from __future__ import annotations

import io
import json
from functools import lru_cache
from pathlib import Path
from typing import Sequence

BYTE_PIECES = [f"<0x{b:02X}>" for b in range(256)]


def bert(texts: Sequence[str]):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(
        vocab_size=900, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    return tok


def roberta(texts: Sequence[str]):
    """Byte-level BPE with RoBERTa's post-processor and added tokens of every flag."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=700, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tok.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True, normalized=False)])
    tok.add_tokens([
        AddedToken("[ROW]", rstrip=True, normalized=False),
        AddedToken("the end", single_word=True, normalized=False),
        AddedToken("ﬁne", normalized=True),  # NFKC makes it "fine": matched in normalized text
        AddedToken("@@", single_word=False, lstrip=True, rstrip=True, normalized=False),
    ])
    return tok


def llama(texts: Sequence[str], *, legacy: bool = True):
    """▁ BPE with byte fallback: ``legacy`` = Llama 2's Prepend/Replace normalizers and no
    pre-tokenizer; else the newer Metaspace(prepend_scheme="first", split=false) form."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    if legacy:
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])
    else:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
        tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Metaspace(replacement="▁",
                                                                                     prepend_scheme="first")])
    tok.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=900, special_tokens=["<unk>", "<s>", "</s>", *BYTE_PIECES], show_progress=False,
        limit_alphabet=120))
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", tok.token_to_id("<s>"))])
    # Llama's byte pieces live in the model's vocabulary only, not among the added tokens.
    document = json.loads(tok.to_str())
    document["added_tokens"] = [t for t in document["added_tokens"] if t["content"] not in BYTE_PIECES]
    return Tokenizer.from_str(json.dumps(document))


@lru_cache(maxsize=1)
def nmt_nfkc_charsmap() -> bytes:
    """SentencePiece's default ``nmt_nfkc`` character map, from a model it trains on a few lines."""
    import sentencepiece as spm
    from sentencepiece import sentencepiece_model_pb2

    out = io.BytesIO()
    lines = ["hello world", "ﬁne Ｆｕｌｌ ｗｉｄｔｈ", "ｶﾀｶﾅ text", "numbers ①②③ and more"] * 20
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=out, vocab_size=40,
                                   model_type="char", minloglevel=3)
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(out.getvalue())
    return proto.normalizer_spec.precompiled_charsmap


def t5(texts: Sequence[str]):
    """Unigram with a Precompiled (nmt_nfkc) normalizer, WhitespaceSplit + Metaspace, ``$A </s>``."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.Sequence([normalizers.Precompiled(nmt_nfkc_charsmap()),
                                           normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                                 pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")])
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    tok.train_from_iterator(texts, trainers.UnigramTrainer(
        vocab_size=1500, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>", show_progress=False))
    tok.post_processor = processors.TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", tok.token_to_id("</s>"))])
    return tok


BUILDERS = {"bert": bert, "roberta": roberta, "llama": llama,
            "llama-metaspace": lambda texts: llama(texts, legacy=False), "t5": t5}


def save(tok, folder: Path, name: str) -> Path:
    path = Path(folder) / f"{name}.tokenizer.json"
    tok.save(str(path))
    return path
