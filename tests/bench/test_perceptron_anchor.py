"""bench/perceptron_anchor.py on a tiny corpus: it reads CoNLL-U as qkv does, counts the test words
absent from the training file, and tags every word it saw as trained.

usage: test_perceptron_anchor.py SOURCE_DIR
Exits with 77 (CTest's "skipped") when NLTK is not installed, as the script itself does.
"""
import json
import os
import subprocess
import sys
import tempfile

# Each training sentence 25 times: NLTK puts a word seen at least 20 times with one tag 97% of the
# time into its tag dictionary, which tags it without the perceptron, so every seen word of the
# test must come out right.
TRAIN = [
    [("the", "DET"), ("dog", "NOUN"), ("runs", "VERB"), (".", ".")],
    [("a", "DET"), ("cat", "NOUN"), ("sleeps", "VERB"), (".", ".")],
]
# Test: 8 words, of which "bird" and "sings" never occur in training. The comment, the multiword
# token "1-2" and the empty node "3.1" are not words and must not be counted.
TEST = """# text = the dog runs .
1\tthe\t_\tDET\t_\t_\t_\t_\t_\t_
2\tdog\t_\tNOUN\t_\t_\t_\t_\t_\t_
3\truns\t_\tVERB\t_\t_\t_\t_\t_\t_
4\t.\t_\t.\t_\t_\t_\t_\t_\t_

1-2\tthe bird\t_\t_\t_\t_\t_\t_\t_\t_
1\tthe\t_\tDET\t_\t_\t_\t_\t_\t_
2\tbird\t_\tNOUN\t_\t_\t_\t_\t_\t_
3\tsings\t_\tVERB\t_\t_\t_\t_\t_\t_
3.1\tloudly\t_\tADV\t_\t_\t_\t_\t_\t_
4\t.\t_\t.\t_\t_\t_\t_\t_\t_
"""


def conllu(sentences):
    lines = []
    for sentence in sentences:
        lines += [f"{i}\t{form}\t_\t{tag}\t_\t_\t_\t_\t_\t_" for i, (form, tag) in enumerate(sentence, 1)]
        lines.append("")
    return "\n".join(lines) + "\n"


def main():
    script = os.path.join(sys.argv[1], "bench", "perceptron_anchor.py")
    with tempfile.TemporaryDirectory() as tmp:
        train, test = os.path.join(tmp, "train.conllu"), os.path.join(tmp, "test.conllu")
        with open(train, "w") as f:
            f.write(conllu(TRAIN * 25))
        with open(test, "w") as f:
            f.write(TEST)
        run = subprocess.run([sys.executable, script, train, test, "--iterations", "2", "--json"],
                             capture_output=True, text=True)
    if run.returncode == 77:
        print(run.stderr, end="")
        return 77
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["train_tokens"] == 200, result
    assert result["test_tokens"] == 8, result
    assert result["unseen_tokens"] == 2, result
    assert result["iterations"] == 2, result
    # The six seen words are right; the accuracy is theirs plus whatever the two unseen ones got.
    unseen_correct = round(result["unseen_accuracy"] * 2)
    assert result["accuracy"] == round((6 + unseen_correct) / 8, 5), result
    assert result["tokens_per_second"] > 0 and result["train_seconds"] >= 0, result
    print(run.stdout, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
