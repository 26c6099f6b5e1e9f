#!/usr/bin/env python3
"""Regenerates tests/data/jsonschemabench/sample.jsonl: a stratified sample
of JSONSchemaBench (github.com/guidance-ai/jsonschemabench), PER schemas of
each of its ten datasets, evenly spaced over each dataset's files sorted by
name (no randomness). One JSON object a line: {"dataset", "file",
"schema"}.

  scripts/sample_jsonschemabench.py GIT_DIR [--per 20] [--commit REV]

GIT_DIR is a clone (bare or not) of guidance-ai/jsonschemabench; the
schemas are read with `git show`, so no checkout is needed. The datasets are
data/<name>/*.json, and WashingtonPost from maskbench/data (its files wrap
the schema in {"schema": ...})."""
import argparse
import json
import pathlib
import subprocess

DATASETS = ["Glaiveai2K", "Github_trivial", "Github_easy", "Snowplow",
            "Github_medium", "Kubernetes", "WashingtonPost", "Github_hard",
            "JsonSchemaStore", "Github_ultra"]
OUT = (pathlib.Path(__file__).resolve().parents[1] / "tests" / "data" /
       "jsonschemabench" / "sample.jsonl")


def git(gd, *args):
    return subprocess.run(["git", "--git-dir", gd, *args], check=True,
                          capture_output=True, text=True).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("git_dir")
    ap.add_argument("--per", type=int, default=20)
    ap.add_argument("--commit", default="HEAD")
    a = ap.parse_args()
    files = git(a.git_dir, "ls-tree", "-r", "--name-only", a.commit).split()
    lines = []
    for ds in DATASETS:
        if ds == "WashingtonPost":
            names = sorted(f for f in files
                           if f.startswith("maskbench/data/WashingtonPost---"))
        else:
            names = sorted(f for f in files
                           if f.startswith(f"data/{ds}/") and
                           f.endswith(".json"))
        step = len(names) / a.per
        for i in range(a.per):
            f = names[int(i * step)]
            doc = json.loads(git(a.git_dir, "show", f"{a.commit}:{f}"))
            schema = doc["schema"] if ds == "WashingtonPost" else doc
            lines.append(json.dumps({"dataset": ds, "file": f,
                                     "schema": schema}, sort_keys=False))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n")
    print(f"{len(lines)} schemas -> {OUT}")


if __name__ == "__main__":
    main()
