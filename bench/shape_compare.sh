#!/usr/bin/env bash
# Acceptance of issue 27 ("the shape"): behaviour unchanged, `inspect --json`
# byte-identical on the corpus. Runs `BIN inspect --json FILE` with two builds
# (the commit before the refactor and the one measured) on every file under
# the corpus, whatever it is (GGUF, .llmw, the expect files, files that fail),
# and compares stdout, stderr and the exit code byte for byte.
#
#   bench/shape_compare.sh BASE_BIN CURRENT_BIN [CORPUS_DIR]
#
# CORPUS_DIR defaults to ../shared/corpus beside the repository. One line per
# differing file (which of stdout/stderr/rc differ), then a summary. Exits 1 if
# any file's stdout or rc differ (stderr alone is reported, not fatal), 2 on a
# usage error. Set KEEP=DIR to keep every output there for diffing.
set -euo pipefail

usage() {
    echo "usage: $0 BASE_BIN CURRENT_BIN [CORPUS_DIR]" >&2
    exit 2
}
[ $# -ge 2 ] && [ $# -le 3 ] || usage
base=$1
cur=$2
corpus=${3:-"$(dirname "$0")/../../shared/corpus"}
for bin in "$base" "$cur"; do
    [ -x "$bin" ] || { echo "$0: not an executable: $bin" >&2; exit 2; }
done
[ -d "$corpus" ] || { echo "$0: no corpus directory: $corpus" >&2; exit 2; }

if [ -n "${KEEP:-}" ]; then
    out=$KEEP
    mkdir -p "$out"
else
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
fi

# The same environment for both builds: no colour, no terminal, C locale.
export NO_COLOR=1 LC_ALL=C
unset COLUMNS CLICOLOR_FORCE FORCE_COLOR

# run BIN FILE PREFIX: PREFIX.out, PREFIX.err, PREFIX.rc
run() {
    local rc=0
    "$1" inspect --json "$2" >"$3.out" 2>"$3.err" </dev/null || rc=$?
    echo "$rc" >"$3.rc"
}

n=0 same=0 differ=0 err_only=0 i=0
while IFS= read -r -d '' file; do
    n=$((n + 1))
    i=$((i + 1))
    rel=${file#"$corpus"/}
    run "$base" "$file" "$out/$i.base"
    run "$cur" "$file" "$out/$i.cur"
    what=()
    cmp -s "$out/$i.base.out" "$out/$i.cur.out" || what+=(stdout)
    cmp -s "$out/$i.base.err" "$out/$i.cur.err" || what+=(stderr)
    cmp -s "$out/$i.base.rc" "$out/$i.cur.rc" || what+=(rc)
    [ -n "${KEEP:-}" ] && printf '%s\t%s\n' "$i" "$rel" >>"$out/index.tsv"
    if [ ${#what[@]} -eq 0 ]; then
        same=$((same + 1))
        continue
    fi
    tag="${what[*]}"
    tag=${tag// /+}
    if [ "$tag" = stderr ]; then
        err_only=$((err_only + 1))
        same=$((same + 1))
    else
        differ=$((differ + 1))
    fi
    rcs="rc $(cat "$out/$i.base.rc")->$(cat "$out/$i.cur.rc")"
    # 80 columns: the tag and exit codes first, the path cut on the left.
    head="differ ${tag} (${rcs}) "
    room=$((80 - ${#head}))
    [ ${#rel} -gt "$room" ] && rel="...${rel: -$((room - 3))}"
    echo "${head}${rel}"
done < <(find "$corpus" -type f -print0 | sort -z)

echo "$n files, $same identical stdout+rc, $differ differ"
[ "$err_only" -eq 0 ] ||
    echo "($err_only of the identical differ on stderr alone)"
[ "$differ" -eq 0 ]
