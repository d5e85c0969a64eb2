// Golden token ids for the tokenizer tests, from the npm package `tokenizers` (the official Node
// binding of Hugging Face's Rust tokenizers: the code transformers runs), cross-checked with
// @huggingface/tokenizers (the JavaScript port). Where they disagree the Rust binding wins and the
// disagreement is recorded in the golden file ("js_disagreements").
//
// Usage: scripts/fetch-test-data.sh && node tests/reference/tokenizer_goldens.mjs [TEST_DATA_DIR]
// Writes tests/reference/tokenizers/<name>.json for every tokenizer under TEST_DATA_DIR/tokenizers.
import fs from 'fs';
import path from 'path';
import { createRequire } from 'module';
import { fileURLToPath } from 'url';

const here = path.dirname(fileURLToPath(import.meta.url));
const dataDir = path.resolve(process.argv[2] || path.join(here, '..', '..', 'build', 'test-data'));
const modules = path.join(dataDir, 'npm', 'node_modules');
const require = createRequire(path.join(dataDir, 'npm', 'package.json'));
const rust = require('tokenizers');
const js = await import(path.join(modules, '@huggingface', 'tokenizers', 'dist', 'tokenizers.mjs'));
const rustVersion = JSON.parse(fs.readFileSync(path.join(modules, 'tokenizers', 'package.json'), 'utf8')).version;
const jsVersion = JSON.parse(fs.readFileSync(path.join(modules, '@huggingface', 'tokenizers', 'package.json'), 'utf8')).version;

const longWord = 'Donaudampfschifffahrtsgesellschaftskapitänswitwe'.repeat(210).slice(0, 10000);
export const inputs = [
  '', ' ', '   ', '\n', '\t\t', '\r\n', ' \n \n ', '\u3000', '\u00a0 \u00a0', '\u0085', '\u2028',
  'Hello world', 'Hello world!', ' Hello', 'Hello ', 'hello  world', 'HELLO WORLD', 'a', 'A',
  "I'm, you're, he's, we've, they'll, I'd, don't, DON'T, It'S, 'Tis, ''quoted'' and ``quoted''",
  'Ça va? Œuvre, naïve façade, São Paulo, Dvořák, Ångström, Łódź, İstanbul, ſ and \'ſ',
  'Привет, как дела? Съешь же ещё этих мягких французских булок, да выпей чаю.',
  'Καλημέρα κόσμε, ΣΟΦΙΑ σοφός ΣΑΣ',
  'مرحبا بالعالم، كيف حالك؟ ١٢٣',
  'שלום עולם, מה שלומך?',
  'नमस्ते दुनिया, क्षत्रिय हिन्दी १२३',
  'สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่าง',
  '你好，世界！我爱自然语言处理。中文没有空格',
  'こんにちは世界、カタカナとひらがなと漢字。',
  '안녕하세요 세계, 한국어 텍스트입니다. ᄀᄁᄂ',
  'Mixed: English, Русский, 中文, العربية, हिन्दी, ไทย, 한국어, Ελληνικά.',
  '👍', '👍👍👍', '👨‍👩‍👧‍👦 family', '🇫🇷🇩🇪🇯🇵 flags', '👋🏽 wave 👋🏿', '🏳️‍🌈', 'I ❤️ NY ☺︎', '🤖🧠💡 ok',
  'e\u0301 vs é', 'a\u0308\u0304 and o\u0328\u0301', 'Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇', 'ﬁ ﬂ ① ² ＡＢＣ ｱｲｳ Ⅻ ㈱',
  'def f(x):\n\tif x  >  1:\n\t\treturn x**2  # comment\r\n    else:\n        pass\n',
  'int main() {\n    printf("%d\\n", 42);\n    return 0;\n}\n',
  '{"key": [1, 2.5, true, null], "nested": {"a": "b"}}',
  'https://example.com/path/to?q=1&b=2#frag user@example.org',
  'a    b\t\t\tc\n\n\nd     \n   ', '    leading spaces', 'trailing spaces    ', 'tabs\tand\tnewlines\n\n',
  '3.14159265358979323846264338327950288419716939937510', '1,234,567.89 and 0x7FFFFFFF', '12345678901234567890123456789',
  '2024-01-01T12:00:00Z', '١٢٣٤٥ ۱۲۳ ०१२३',
  'Hello<|im_start|>world<|im_end|>\n', '<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
  '<think>\nreasoning\n</think>\n\nanswer', 'un<think>ok and a </think>  b',
  '<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n', '<bos>text<eos> <pad><unk>',
  '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>',
  'text [CLS] more [SEP] [MASK] end [UNK]', '[MASK]ed and un[MASK] and  [MASK]  x', '<s> and </s>', ' <bos>  spaced ',
  '\uFFFD', '<0xFF><0x41>', '\u0000 nul', '\u200b\u200c\u200d zero widths', '\uFEFF bom', '\u0007 bell \u001b[0m',
  '▁already▁has▁metaspace', 'Ġalready Ġbyte Ċlevel',
  longWord,
];

// Decoding of id sequences that encode() would not produce (partial UTF-8, specials anywhere).
function decodeCases(tokenizerJson, vocabSize) {
  let seed = 12345;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const cases = [];
  for (let n = 0; n < 12; ++n) {
    const length = 1 + Math.floor(random() * 20);
    cases.push(Array.from({ length }, () => Math.floor(random() * vocabSize)));
  }
  const vocab = tokenizerJson.model.vocab;
  const idOf = (t) => (Array.isArray(vocab) ? vocab.findIndex((e) => e[0] === t) : vocab[t]);
  const bytes = ['<0xE4>', '<0xBD>', '<0xA0>', '<0xF0>', '<0x9F>', '<0x98>', '<0x80>', '<0x41>'].map(idOf).filter((x) => x !== undefined && x >= 0);
  if (bytes.length === 8) cases.push(bytes.slice(0, 2), bytes.slice(0, 3), [bytes[3], bytes[4], bytes[5]], [bytes[6], bytes[7]], [bytes[7], bytes[0]]);
  const specials = (tokenizerJson.added_tokens || []).filter((t) => t.special).slice(0, 3).map((t) => t.id);
  if (specials.length) cases.push([...specials, ...cases[0], specials[0]]);
  return cases;
}

const outDir = path.join(here, 'tokenizers');
fs.mkdirSync(outDir, { recursive: true });
const names = fs.readdirSync(path.join(dataDir, 'tokenizers')).filter((n) => fs.existsSync(path.join(dataDir, 'tokenizers', n, 'tokenizer.json'))).sort();
for (const name of names) {
  const folder = path.join(dataDir, 'tokenizers', name);
  const text = fs.readFileSync(path.join(folder, 'tokenizer.json'), 'utf8');
  const tokenizerJson = JSON.parse(text);
  const configJson = JSON.parse(fs.readFileSync(path.join(folder, 'tokenizer_config.json'), 'utf8'));
  const tokenizer = rust.Tokenizer.fromString(text);
  let jsTokenizer = null, jsError = null;
  try {
    jsTokenizer = new js.Tokenizer(tokenizerJson, configJson);
  } catch (error) {
    jsError = String(error);
  }
  const cases = [];
  const disagreements = [];
  for (const input of inputs) {
    const withSpecial = await tokenizer.encode(input, null, { addSpecialTokens: true });
    const without = await tokenizer.encode(input, null, { addSpecialTokens: false });
    const ids = withSpecial.getIds();
    const entry = {
      input,
      ids,
      tokens: withSpecial.getTokens(),
      ids_no_special: without.getIds(),
      decoded: await tokenizer.decode(ids, false),
      decoded_skip_special: await tokenizer.decode(ids, true),
    };
    cases.push(entry);
    if (jsTokenizer) {
      try {
        const jsIds = jsTokenizer.encode(input).ids;
        const jsDecoded = jsTokenizer.decode(ids);
        if (JSON.stringify(jsIds) !== JSON.stringify(ids) || jsDecoded !== entry.decoded)
          disagreements.push({ input: input.length > 200 ? input.slice(0, 200) + '...' : input, js_ids: jsIds.length > 200 ? 'differs (long)' : jsIds, js_decoded: jsDecoded.length > 200 ? jsDecoded.slice(0, 200) + '...' : jsDecoded });
      } catch (error) {
        disagreements.push({ input: input.slice(0, 200), js_error: String(error) });
      }
    }
  }
  const vocabSize = tokenizer.getVocabSize ? tokenizer.getVocabSize(true) : Object.keys(tokenizerJson.model.vocab).length;
  const decodes = [];
  for (const ids of decodeCases(tokenizerJson, vocabSize)) {
    decodes.push({ ids, decoded: await tokenizer.decode(ids, false), decoded_skip_special: await tokenizer.decode(ids, true) });
  }
  const golden = {
    tokenizer: name,
    reference: `npm tokenizers@${rustVersion} (Hugging Face tokenizers, Rust)`,
    cross_check: jsError ? `@huggingface/tokenizers@${jsVersion} cannot load it: ${jsError}` : `@huggingface/tokenizers@${jsVersion}: ${disagreements.length} of ${inputs.length} inputs differ`,
    js_disagreements: disagreements,
    cases,
    decodes,
  };
  fs.writeFileSync(path.join(outDir, `${name}.json`), JSON.stringify(golden, null, 0) + '\n');
  console.log(`${name}: ${cases.length} inputs, ${decodes.length} decodes; ${golden.cross_check}`);
}
