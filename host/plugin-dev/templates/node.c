// The {{name}} node: upper-cases `text` into `result`.
//
// The host calls `exports_node_describe` once when the plugin is installed, and
// `exports_node_run` for every execution, with the node's params as a JSON object. `run` fills
// `ret` (the outputs as a JSON object) and returns true, or fills `err` and returns false: the
// host reports that like any node's failure. The bindings (target/bindings/node.h) free what
// these functions return, so every string and array in it must come from malloc
// (`node_string_dup`), and they own `params`, which they must free.
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
    node_string_dup(&ret->name, "{{name}}");
    node_string_dup(&ret->description, "Upper-cases a text.");
    ret->params.len = 1;
    ret->params.ptr = malloc(sizeof(pflow_node_types_port_t));
    port(&ret->params.ptr[0], "text", "str", "The text to upper-case.", true);
    ret->outputs.len = 1;
    ret->outputs.ptr = malloc(sizeof(pflow_node_types_port_t));
    port(&ret->outputs.ptr[0], "result", "str", "The text, upper-cased.", true);
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

// `{"<key>": "<value>"}` with the value escaped, malloc'd.
static char *object_with_string(const char *key, const char *value) {
    size_t len = strlen(value);
    char *out = malloc(strlen(key) + len * 6 + 16);
    size_t n = (size_t)sprintf(out, "{\"%s\": \"", key);
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        if (*p == '"' || *p == '\\') {
            out[n++] = '\\';
            out[n++] = (char)*p;
        } else if (*p < 0x20) {
            n += (size_t)sprintf(out + n, "\\u%04x", *p);
        } else {
            out[n++] = (char)*p;
        }
    }
    strcpy(out + n, "\"}");
    return out;
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
    for (char *p = text; *p; p++)
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 'a' + 'A');
    node_string_t message;
    node_string_set(&message, "upper-casing a text");
    pflow_node_log_log(PFLOW_NODE_LOG_LEVEL_DEBUG, &message);
    char *outputs = object_with_string("result", text);
    free(text);
    node_string_dup(&ret->outputs, outputs);
    free(outputs);
    ret->action.is_some = false;
    return true;
}
