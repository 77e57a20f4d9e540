// The {{name}} node: upper-cases `text` into `result`.
//
// The host calls `describe` once when the plugin is installed, and `run` for every execution,
// with the node's params as a JSON string. `run` returns the outputs as a JSON string, or
// throws a node-error object: the host reports it like any node's failure.
import { log } from 'pflow:node/log@0.1.0';

export function describe() {
  return {
    name: '{{name}}',
    description: 'Upper-cases a text.',
    params: [{ name: 'text', type: 'str', description: 'The text to upper-case.', required: true }],
    outputs: [{ name: 'result', type: 'str', description: 'The text, upper-cased.', required: true }],
  };
}

export function run(params) {
  try {
    return upper(JSON.parse(params));
  } catch (error) {
    // A node-error passes through; anything else (a bug) is reported, not left to crash.
    if (error && typeof error.category === 'string') throw error;
    throw { category: 'node_bug', message: String(error), fixable: false, attempted: [], available: [] };
  }
}

function upper({ text }) {
  if (typeof text !== 'string') {
    throw {
      category: 'bad_params',
      message: `Param 'text' must be a string, got ${text === null ? 'null' : typeof text}.`,
      fixable: true,
      attempted: ['text'],
      available: [],
    };
  }
  log('debug', `upper-casing ${text.length} characters`);
  return { outputs: JSON.stringify({ result: text.toUpperCase() }) };
}
