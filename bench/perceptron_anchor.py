"""The classic tagger the Transformer tagger is compared with: NLTK's averaged perceptron.

What it measures: NLTK's PerceptronTagger (Collins 2002, "Discriminative Training Methods for
Hidden Markov Models"; the features of Honnibal's "A good part-of-speech tagger in about 200 lines
of Python", 2013) trained from scratch on the FORM and UPOS columns of a CoNLL-U training file,
then tagging the sentences of a test file. It prints one line; on the Brown Corpus with the 12
universal tags, split by document (files sorted by name; i % 10 == 0 test, == 1 dev, the rest
train; `tagger data --corpus brown --out brown` writes those files), on the project's 2-core
machine with a training run on the other core (`./qkv bench perceptron brown/train.conllu
brown/test.conllu`):

    perceptron: 5 iterations, train 929,446 tokens in 53.5 s; test 115,380 tokens tagged at
    94,708 tokens/s; accuracy 97.61%, on words unseen in training 87.83% (4,846 tokens)

Unseen words are test tokens whose exact form never occurs in the training file (the tagger
itself lower-cases and normalises digits inside its features, so "unseen" here is the stricter
test of the two). With --json it prints the same figures as one JSON object instead. The
perceptron shuffles the training sentences in every iteration; Python's generator is seeded
with 0 first, so a run is repeatable.

Run it with Debian's NLTK (package python3-nltk) through the system interpreter:
    ./qkv bench perceptron TRAIN.conllu TEST.conllu [--iterations 5] [--json]
    /usr/bin/python3 bench/perceptron_anchor.py TRAIN.conllu TEST.conllu [--iterations 5] [--json]
Without NLTK it says so and exits with 77, the code CTest reads as "skipped".
"""

import argparse
import json
import random
import sys
import time

MISSING_DEPENDENCY = 77


def read_conllu(path):
    """The sentences of a CoNLL-U file as lists of (FORM, UPOS) pairs.

    Comments, multiword-token ranges ("1-2") and empty nodes ("8.1") are skipped, as qkv's own
    reader (data/conll.h) skips them: neither is a word of the tag sequence.
    """
    sentences, words = [], []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if not line:
                if words:
                    sentences.append(words)
                words = []
                continue
            if line.startswith("#"):
                continue
            columns = line.split("\t")
            if len(columns) != 10:
                sys.exit(f"{path}:{number}: expected 10 tab-separated columns, found {len(columns)}")
            if "-" in columns[0] or "." in columns[0]:
                continue
            words.append((columns[1], columns[3]))
    if words:
        sentences.append(words)
    if not sentences:
        sys.exit(f"{path}: holds no sentences")
    return sentences


def evaluate(tagger, sentences, known_forms):
    """Tags every sentence; returns the seconds taken and the counts behind the accuracies."""
    counts = dict(tokens=0, correct=0, unseen=0, unseen_correct=0)
    start = time.perf_counter()
    predicted = [tagger.tag([form for form, _ in s]) for s in sentences]
    seconds = time.perf_counter() - start
    for sentence, tags in zip(sentences, predicted):
        for (form, gold), (_, tag) in zip(sentence, tags):
            counts["tokens"] += 1
            counts["correct"] += tag == gold
            if form not in known_forms:
                counts["unseen"] += 1
                counts["unseen_correct"] += tag == gold
    return seconds, counts


def main():
    parser = argparse.ArgumentParser(description="NLTK's averaged perceptron on CoNLL-U files")
    parser.add_argument("train", help="CoNLL-U training file (FORM and UPOS columns are read)")
    parser.add_argument("test", help="CoNLL-U test file")
    parser.add_argument("--iterations", type=int, default=5, help="training passes (default 5)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    if args.iterations < 1:
        parser.error(f"--iterations must be at least 1, got {args.iterations}")
    try:
        from nltk.tag.perceptron import PerceptronTagger
    except ImportError:
        print("perceptron_anchor.py needs NLTK: sudo apt-get install -y python3-nltk, then run it "
              "with /usr/bin/python3", file=sys.stderr)
        sys.exit(MISSING_DEPENDENCY)

    train, test = read_conllu(args.train), read_conllu(args.test)
    known_forms = {form for sentence in train for form, _ in sentence}
    random.seed(0)
    tagger = PerceptronTagger(load=False)
    start = time.perf_counter()
    tagger.train([list(s) for s in train], nr_iter=args.iterations)
    train_seconds = time.perf_counter() - start
    tag_seconds, c = evaluate(tagger, test, known_forms)

    result = {
        "model": "nltk_averaged_perceptron",
        "iterations": args.iterations,
        "train_tokens": sum(len(s) for s in train),
        "test_tokens": c["tokens"],
        "unseen_tokens": c["unseen"],
        "train_seconds": round(train_seconds, 3),
        "tokens_per_second": round(c["tokens"] / tag_seconds),
        "accuracy": round(c["correct"] / c["tokens"], 5),
        "unseen_accuracy": round(c["unseen_correct"] / c["unseen"], 5) if c["unseen"] else None,
    }
    if args.json:
        print(json.dumps(result))
        return
    unseen = "n/a" if result["unseen_accuracy"] is None else f"{100 * result['unseen_accuracy']:.2f}%"
    print(f"perceptron: {args.iterations} iterations, train {result['train_tokens']:,} tokens in "
          f"{train_seconds:.1f} s; test {c['tokens']:,} tokens tagged at {result['tokens_per_second']:,} "
          f"tokens/s; accuracy {100 * result['accuracy']:.2f}%, on words unseen in training {unseen} "
          f"({c['unseen']:,} tokens)")


if __name__ == "__main__":
    main()
