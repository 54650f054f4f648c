"""Which WordPiece score makes a tokenizer a person would use: characters per token on held-out lines.

    python bench/bench_wordpiece_defaults.py [--vocab 8000] [--mb 3]

Three corpora, each cut into training lines and held-out lines (every 10th line held out):

* ``shared``: the shared multilingual corpora (``../shared/corpora/*.txt``) concatenated;
* ``code``: the Python sources of the standard library this interpreter runs;
* ``unseen``: text nobody tuned on — the docstrings of the standard library's modules, classes and
  functions, with the shared corpora's lines shuffled in (seeded) so it is mixed-language prose.

Each corpus is capped at ``--mb`` MB of training text. Four tokenizers at the same vocabulary size,
BERT's cased normalizer and pre-tokenizer and BERT's special tokens: ours with the ``likelihood``
score at minimum pair frequency 1 (the default before this benchmark) and 10, ours with the
``frequency`` score, and ``tokenizers``' ``WordPieceTrainer`` trained with ``train(files)`` on a
file of the same training lines. Printed: characters per token on the held-out lines (higher is
better) and the seconds each took to train and encode.

Not a test: the numbers decide a default, they do not pass or fail.
"""

from __future__ import annotations

import argparse
import ast
import random
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPORA = ROOT.parent / "shared" / "corpora"
if not CORPORA.is_dir():
    CORPORA = Path("/work/shared/corpora")
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def _cap(lines: list[str], mb: float) -> list[str]:
    out, size = [], 0
    for line in lines:
        if size > mb * 1e6:
            break
        out.append(line)
        size += len(line.encode("utf-8")) + 1
    return out


def shared_lines() -> list[str]:
    """Every non-empty line of the shared corpora, shuffled (seeded) so a capped cut holds every language."""
    lines = [line for p in sorted(CORPORA.glob("*.txt"))
             for line in p.read_text(encoding="utf-8").split("\n") if line.strip()]
    random.Random(7).shuffle(lines)
    return lines


def _stdlib_files() -> list[Path]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts and "test" not in p.parts)


def code_lines() -> list[str]:
    lines: list[str] = []
    for path in _stdlib_files():
        try:
            lines.extend(line for line in path.read_text(encoding="utf-8").split("\n") if line.strip())
        except (UnicodeDecodeError, OSError):
            continue
    return lines


def unseen_lines() -> list[str]:
    docs: list[str] = []
    for path in _stdlib_files():
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, OSError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    docs.extend(line.strip() for line in doc.split("\n") if line.strip())
    mixed = docs + shared_lines()[::7]
    random.Random(19).shuffle(mixed)
    return mixed


def split(lines: list[str], mb: float) -> tuple[list[str], list[str]]:
    train = [line for i, line in enumerate(lines) if i % 10]
    held = [line for i, line in enumerate(lines) if i % 10 == 0]
    return _cap(train, mb), _cap(held, mb / 9)


def ours(train: list[str], vocab: int, score: str, min_frequency: int):
    from workbench.core.count import chunks_for, count_pretokens
    from workbench.core.encoder import Encoder
    from workbench.core.wordpiece import WordPieceConfig, WordPieceTrainer

    counts = count_pretokens(chunks_for("bert", ["\n".join(train)]), pretokenizer="bert",
                             normalizer=("bert",))
    trainer = WordPieceTrainer(counts, WordPieceConfig(vocab_size=vocab, score=score,  # type: ignore[arg-type]
                                                       min_frequency=min_frequency))
    for _ in trainer.run():
        pass
    tokenizer = trainer.tokenizer()
    encoder = Encoder(tokenizer)
    return lambda line: len(encoder.encode(line))


def hf(train: list[str], vocab: int):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=False, strip_accents=False)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab, special_tokens=SPECIALS, show_progress=False)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "train.txt"
        path.write_text("\n".join(train) + "\n", encoding="utf-8")
        tok.train([str(path)], trainer)
    return lambda line: len(tok.encode(line, add_special_tokens=False).ids)


def measure(encode, held: list[str]) -> float:
    return sum(map(len, held)) / max(sum(map(encode, held)), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--mb", type=float, default=3.0, help="training text per corpus, in MB")
    args = parser.parse_args()
    corpora = {"shared": shared_lines(), "code": code_lines(), "unseen": unseen_lines()}
    columns = [("likelihood, min freq 1", lambda t: ours(t, args.vocab, "likelihood", 1)),
               ("likelihood, min freq 10", lambda t: ours(t, args.vocab, "likelihood", 10)),
               ("frequency", lambda t: ours(t, args.vocab, "frequency", 0)),
               ("tokenizers WordPieceTrainer", lambda t: hf(t, args.vocab))]
    print(f"WordPiece at |V| {args.vocab:,}: characters per token on held-out lines (seconds)")
    print(f"{'corpus':<8} {'train MB':>8} " + " ".join(f"{name:>27}" for name, _ in columns))
    for name, lines in corpora.items():
        train, held = split(lines, args.mb)
        cells = []
        for _label, make in columns:
            t0 = time.perf_counter()
            cpt = measure(make(train), held)
            cells.append(f"{cpt:.2f} ({time.perf_counter() - t0:.0f} s)")
        mb = sum(len(x.encode('utf-8')) + 1 for x in train) / 1e6
        print(f"{name:<8} {mb:>8.1f} " + " ".join(f"{c:>27}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
