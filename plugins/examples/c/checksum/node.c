// Example C node `checksum`: the FNV-1a hash, byte count and line count of a text.
//
// Shows a node in C end to end: a string param in, a string and numbers out, a log line, and
// a structured error for bad params. Build and install it with
// `pflow-host plugin build plugins/examples/c/checksum`. `node.h` is generated from `wit/` by
// the build; what the exports return is freed by the bindings, so it must come from malloc.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"

static void port(pflow_node_types_port_t *port, const char *name, const char *type,
                 const char *description, bool required) {
    node_string_dup(&port->name, name);
    node_string_dup(&port->type, type);
    node_string_dup(&port->description, description);
    port->required = required;
    port->schema.is_some = false;
}

void exports_node_describe(node_node_spec_t *ret) {
    node_string_dup(&ret->name, "checksum");
    node_string_dup(&ret->description,
                    "FNV-1a hash (64-bit, hex), byte count and line count of a text.");
    ret->params.len = 1;
    ret->params.ptr = malloc(sizeof(pflow_node_types_port_t));
    port(&ret->params.ptr[0], "text", "str", "The text to hash.", true);
    ret->outputs.len = 3;
    ret->outputs.ptr = malloc(3 * sizeof(pflow_node_types_port_t));
    port(&ret->outputs.ptr[0], "fnv1a", "str", "The 64-bit FNV-1a hash, 16 hex digits.", true);
    port(&ret->outputs.ptr[1], "bytes", "int", "The text's length in UTF-8 bytes.", true);
    port(&ret->outputs.ptr[2], "lines", "int", "How many lines the text has.", true);
}

// --- A little JSON: enough to read one string field and write one back. -------------------

typedef struct {
    const uint8_t *at, *end;
} cursor_t;

static void skip_space(cursor_t *c) {
    while (c->at < c->end && (*c->at == ' ' || *c->at == '\t' || *c->at == '\n' || *c->at == '\r'))
        c->at++;
}

// Reads a JSON string at the cursor into a malloc'd, NUL-terminated buffer (`\uXXXX` escapes
// become UTF-8; surrogate pairs are not joined). NULL when it is not a string.
static char *read_string(cursor_t *c) {
    if (c->at >= c->end || *c->at != '"')
        return NULL;
    c->at++;
    char *out = malloc((size_t)(c->end - c->at) * 2 + 1);
    size_t n = 0;
    while (c->at < c->end && *c->at != '"') {
        uint8_t ch = *c->at++;
        if (ch != '\\') {
            out[n++] = (char)ch;
            continue;
        }
        if (c->at >= c->end)
            break;
        ch = *c->at++;
        switch (ch) {
        case 'n': out[n++] = '\n'; break;
        case 't': out[n++] = '\t'; break;
        case 'r': out[n++] = '\r'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'u': {
            unsigned code = 0;
            for (int i = 0; i < 4 && c->at < c->end; i++) {
                char h = (char)*c->at++;
                code = code * 16 + (unsigned)(h <= '9' ? h - '0' : (h | 32) - 'a' + 10);
            }
            if (code < 0x80) {
                out[n++] = (char)code;
            } else if (code < 0x800) {
                out[n++] = (char)(0xC0 | (code >> 6));
                out[n++] = (char)(0x80 | (code & 0x3F));
            } else {
                out[n++] = (char)(0xE0 | (code >> 12));
                out[n++] = (char)(0x80 | ((code >> 6) & 0x3F));
                out[n++] = (char)(0x80 | (code & 0x3F));
            }
            break;
        }
        default: out[n++] = (char)ch; break;  // \" \\ \/
        }
    }
    c->at++;  // the closing quote
    out[n] = '\0';
    return out;
}

// Skips one JSON value of any kind.
static void skip_value(cursor_t *c) {
    skip_space(c);
    if (c->at < c->end && *c->at == '"') {
        free(read_string(c));
        return;
    }
    int depth = 0;
    while (c->at < c->end) {
        uint8_t ch = *c->at;
        if (ch == '"') {
            free(read_string(c));
            continue;
        }
        if (ch == '{' || ch == '[')
            depth++;
        else if (ch == '}' || ch == ']') {
            if (depth == 0)
                return;
            depth--;
        } else if (ch == ',' && depth == 0)
            return;
        c->at++;
    }
}

// The string value of `key` in a JSON object, malloc'd; NULL when missing or not a string.
static char *string_field(const node_json_t *json, const char *key) {
    cursor_t c = {json->ptr, json->ptr + json->len};
    skip_space(&c);
    if (c.at >= c.end || *c.at++ != '{')
        return NULL;
    for (;;) {
        skip_space(&c);
        char *name = read_string(&c);
        if (name == NULL)
            return NULL;
        skip_space(&c);
        if (c.at < c.end && *c.at == ':')
            c.at++;
        skip_space(&c);
        int found = strcmp(name, key) == 0;
        free(name);
        if (found)
            return read_string(&c);
        skip_value(&c);
        skip_space(&c);
        if (c.at >= c.end || *c.at++ != ',')
            return NULL;
    }
}

static void fail(node_node_error_t *err, const char *category, const char *message,
                 const char *param) {
    memset(err, 0, sizeof *err);
    node_string_dup(&err->category, category);
    node_string_dup(&err->message, message);
    err->fixable = true;
    err->attempted.len = 1;
    err->attempted.ptr = malloc(sizeof(node_string_t));
    node_string_dup(&err->attempted.ptr[0], param);
}

bool exports_node_run(node_json_t *params, node_node_output_t *ret, node_node_error_t *err) {
    char *text = string_field(params, "text");
    node_json_free(params);
    if (text == NULL) {
        fail(err, "bad_params", "Param 'text' must be a string.", "text");
        return false;
    }
    uint64_t hash = 0xcbf29ce484222325ULL;
    size_t bytes = strlen(text), lines = bytes > 0 ? 1 : 0;
    for (size_t i = 0; i < bytes; i++) {
        hash = (hash ^ (uint8_t)text[i]) * 0x100000001b3ULL;
        if (text[i] == '\n' && i + 1 < bytes)
            lines++;
    }
    free(text);
    char message[64];
    snprintf(message, sizeof message, "hashed %zu bytes", bytes);
    node_string_t log_message;
    node_string_set(&log_message, message);
    pflow_node_log_log(PFLOW_NODE_LOG_LEVEL_DEBUG, &log_message);
    char outputs[128];
    snprintf(outputs, sizeof outputs,
             "{\"fnv1a\": \"%016" PRIx64 "\", \"bytes\": %zu, \"lines\": %zu}", hash, bytes,
             lines);
    node_string_dup(&ret->outputs, outputs);
    ret->action.is_some = false;
    return true;
}
