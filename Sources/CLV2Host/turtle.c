// A Turtle syntax check for the `lv2` node's `state` parameter, at
// validation: serd (lilv's parser) reads the text and keeps nothing; the
// first error's message, line and column are returned instead of printed,
// and whether a subject is a preset (`a pset:Preset`): lilv 0.24's
// lilv_state_new_from_string dereferences NULL when none is.
// In C because serd hands its errors over as printf formats with a va_list.
#include "CLV2Host.h"
#include <serd-0/serd/serd.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    int failed;
    char *message;
    size_t capacity;
    unsigned line;
    unsigned column;
    SerdEnv *env;
    int has_preset;
} agraph_turtle_error;

#define AGRAPH_RDF_TYPE "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
#define AGRAPH_PSET_PRESET "http://lv2plug.in/ns/ext/presets#Preset"

/// Whether `node` (a URI or a prefixed name) is `uri`.
static int agraph_turtle_is(SerdEnv *env, const SerdNode *node, const char *uri) {
    if (!node) return 0;
    if (node->type == SERD_URI) return strcmp((const char *)node->buf, uri) == 0;
    if (node->type != SERD_CURIE) return 0;
    SerdNode full = serd_env_expand_node(env, node);
    int same = full.buf && strcmp((const char *)full.buf, uri) == 0;
    serd_node_free(&full);
    return same;
}

static SerdStatus agraph_turtle_base(void *handle, const SerdNode *uri) {
    return serd_env_set_base_uri(((agraph_turtle_error *)handle)->env, uri);
}

static SerdStatus agraph_turtle_prefix(void *handle, const SerdNode *name, const SerdNode *uri) {
    return serd_env_set_prefix(((agraph_turtle_error *)handle)->env, name, uri);
}

static SerdStatus agraph_turtle_on_error(void *handle, const SerdError *error) {
    agraph_turtle_error *e = (agraph_turtle_error *)handle;
    if (e->failed) return SERD_SUCCESS;
    e->failed = 1;
    e->line = error->line;
    e->column = error->col;
    if (e->capacity > 0) {
        va_list args;
        va_copy(args, *error->args);
        vsnprintf(e->message, e->capacity, error->fmt, args);
        va_end(args);
        size_t n = strlen(e->message);
        while (n > 0 && (e->message[n - 1] == '\n' || e->message[n - 1] == '\r')) e->message[--n] = '\0';
    }
    return SERD_SUCCESS;
}

static SerdStatus agraph_turtle_statement(void *handle, SerdStatementFlags flags, const SerdNode *graph,
                                          const SerdNode *subject, const SerdNode *predicate, const SerdNode *object,
                                          const SerdNode *datatype, const SerdNode *lang) {
    (void)flags; (void)graph; (void)subject; (void)datatype; (void)lang;
    agraph_turtle_error *e = (agraph_turtle_error *)handle;
    if (!e->has_preset && agraph_turtle_is(e->env, predicate, AGRAPH_RDF_TYPE)
        && agraph_turtle_is(e->env, object, AGRAPH_PSET_PRESET)) {
        e->has_preset = 1;
    }
    return SERD_SUCCESS;
}

int agraph_turtle_check(const char *text, char *message, size_t capacity, unsigned *line, unsigned *column,
                        int *has_preset) {
    agraph_turtle_error e = {0, message, capacity, 0, 0, NULL, 0};
    if (capacity > 0) message[0] = '\0';
    *has_preset = 0;
    e.env = serd_env_new(NULL);
    if (!e.env) return 0;
    // A state lilv writes uses these without declaring them (lilv reads
    // it with them declared).
    serd_env_set_prefix_from_strings(e.env, (const uint8_t *)"pset", (const uint8_t *)"http://lv2plug.in/ns/ext/presets#");
    serd_env_set_prefix_from_strings(e.env, (const uint8_t *)"rdf", (const uint8_t *)"http://www.w3.org/1999/02/22-rdf-syntax-ns#");
    SerdReader *reader = serd_reader_new(SERD_TURTLE, &e, NULL, agraph_turtle_base, agraph_turtle_prefix,
                                         agraph_turtle_statement, NULL);
    if (!reader) { serd_env_free(e.env); return 0; }
    serd_reader_set_error_sink(reader, agraph_turtle_on_error, &e);
    SerdStatus st = serd_reader_read_string(reader, (const uint8_t *)text);
    serd_reader_free(reader);
    serd_env_free(e.env);
    *has_preset = e.has_preset;
    if (!e.failed && st > SERD_FAILURE) {
        e.failed = 1;
        if (capacity > 0) snprintf(message, capacity, "%s", (const char *)serd_strerror(st));
    }
    *line = e.line;
    *column = e.column;
    return e.failed;
}
