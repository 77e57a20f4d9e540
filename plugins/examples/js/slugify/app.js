// Example JavaScript node `slugify`: a title into a URL slug.
//
// Shows a node in JavaScript end to end: a string param in, a string and a number out, a log
// line, and a structured error for bad params. Build and install it with
// `pflow-host plugin build plugins/examples/js/slugify`.
import { log } from 'pflow:node/log@0.1.0';

export function describe() {
  return {
    name: 'slugify',
    description: 'Turns a title into a URL slug: lower case, Latin accents removed, words joined by a separator.',
    params: [
      { name: 'text', type: 'str', description: 'The title.', required: true },
      { name: 'separator', type: 'str', description: "Joins the words (default '-').", required: false },
    ],
    outputs: [
      { name: 'slug', type: 'str', description: 'The slug.', required: true },
      { name: 'words', type: 'int', description: 'How many words the slug has.', required: true },
    ],
  };
}

export function run(params) {
  try {
    return slugify(JSON.parse(params));
  } catch (error) {
    // A node-error passes through; anything else (a bug) is reported, not left to crash.
    if (error && typeof error.category === 'string') throw error;
    throw { category: 'node_bug', message: String(error), fixable: false, attempted: [], available: [] };
  }
}

function slugify({ text, separator = '-' }) {
  if (typeof text !== 'string') {
    throw badParam('text', `must be a string, got ${text === null ? 'null' : typeof text}`);
  }
  if (typeof separator !== 'string') {
    throw badParam('separator', 'must be a string');
  }
  // The engine has no Unicode normalisation (no ICU): accents are mapped by hand.
  const words = [...text.toLowerCase()]
    .map((letter) => ACCENTS[letter] ?? letter)
    .join('')
    .split(/[^a-z0-9]+/)
    .filter((word) => word.length > 0);
  log('debug', `${words.length} words`);
  return { outputs: JSON.stringify({ slug: words.join(separator), words: words.length }) };
}

const ACCENTS = Object.fromEntries(
  [...'àáâãäåæçèéêëìíîïñòóôõöøœùúûüýÿß'].map((letter, i) =>
    [letter, ['a', 'a', 'a', 'a', 'a', 'a', 'ae', 'c', 'e', 'e', 'e', 'e', 'i', 'i', 'i', 'i', 'n',
      'o', 'o', 'o', 'o', 'o', 'o', 'oe', 'u', 'u', 'u', 'u', 'y', 'y', 'ss'][i]]),
);

function badParam(name, problem) {
  return {
    category: 'bad_params',
    message: `Param '${name}' ${problem}.`,
    fixable: true,
    attempted: [name],
    available: [],
  };
}
