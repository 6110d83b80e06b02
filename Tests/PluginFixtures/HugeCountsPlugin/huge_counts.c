/*
 * Test fixture: a plugin that lies about its sizes. The host must refuse it
 * (or the one node type) with the reason, at once and without growing
 * memory, reading no further than its stated limits (agraph_plugin.h,
 * AGRAPH_MAX_*). The environment variable AGRAPH_TEST_HUGE_COUNTS, read at
 * each call of the entry point, picks what the descriptor says:
 *   node-types    (default) 4294967295 node types, table NULL
 *   node-table    4294967295 node types, a table of one
 *   params        one type claiming 4294967295 parameters (a table of one)
 *   choices       one type with a choice parameter claiming 4294967295 choices
 *   unterminated  one type whose type id has no NUL within 8 KiB
 *   long-summary  one type whose summary is 100 KiB
 *   long-name     the plugin's name is 100 KiB
 *   long-details  the plugin-info details are 100 KiB
 *   at-limits     a valid type whose summary, parameter summary and choice
 *                 are exactly AGRAPH_MAX_STRING bytes, with
 *                 AGRAPH_MAX_CHOICES choices: accepted
 */
#include "huge_counts.h"
/* The target does not depend on CAGraphPlugin; include the header by path. */
#include "../../../Sources/CAGraphPlugin/include/agraph_plugin.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HUGE_COUNT UINT32_MAX
#define BIG (100 * 1024)

static char big_text[BIG + 1];                     /* 'a' × BIG, NUL-terminated */
static char unterminated[8192];                    /* 'x' × 8192, no NUL */
static char at_limit[AGRAPH_MAX_STRING + 1];       /* 'b' × AGRAPH_MAX_STRING */
static const char *many_choices[AGRAPH_MAX_CHOICES];
static char choice_names[AGRAPH_MAX_CHOICES][8];

/* A do-nothing processor, so that a type is complete apart from the lie. */
typedef struct fixture_instance { int unused; } fixture_instance;
static agraph_instance_t *fx_create(const agraph_create_info_t *info, char *error, uint32_t capacity) {
    (void)info; (void)error; (void)capacity;
    return (agraph_instance_t *)calloc(1, sizeof(fixture_instance));
}
static int32_t fx_activate(agraph_instance_t *i, double rate, uint32_t max, char *error, uint32_t capacity) {
    (void)i; (void)rate; (void)max; (void)error; (void)capacity;
    return 1;
}
static void fx_process(agraph_instance_t *i, agraph_process_t *block) {
    (void)i;
    const agraph_input_port_buffers_t *in = &block->input_ports[0];
    agraph_output_port_buffers_t *out = &block->output_ports[0];
    for (uint32_t c = 0; c < out->channels; c++)
        memcpy(out->buffers[c], in->buffers[c], block->frames * sizeof(float));
}
static void fx_deactivate(agraph_instance_t *i) { (void)i; }
static void fx_destroy(agraph_instance_t *i) { free(i); }

static const agraph_port_t fx_in = { "in", AGRAPH_CHANNELS_FIXED, 0, 1, 0 };
static const agraph_port_t fx_out = { "out", AGRAPH_CHANNELS_SAME_AS_INPUT, 0, 0, 0 };
static const char *const two_choices[] = { "one", "two" };

static agraph_param_t fx_param = {
    "mode", "A choice.", NULL, AGRAPH_PARAM_CHOICE, 0, 0, 0, 0, NULL, two_choices, 2, 0
};

static agraph_node_type_t fx_type = {
    .type_id = "com.example.test-bounded",
    .summary = "A fixture type.",
    .domain = AGRAPH_DOMAIN_REALTIME,
    .input_count = 1,
    .output_count = 1,
    .inputs = &fx_in,
    .outputs = &fx_out,
    .param_count = 1,
    .params = &fx_param,
    .create = fx_create,
    .activate = fx_activate,
    .process = fx_process,
    .deactivate = fx_deactivate,
    .destroy = fx_destroy,
};

static const agraph_node_type_t *fx_types[] = { &fx_type };

static const char *details(void) { return big_text; }
static const agraph_plugin_info_ext_t info_ext = { details };
static const void *get_extension(const char *id) {
    if (id && strcmp(id, AGRAPH_EXT_PLUGIN_INFO) == 0) return &info_ext;
    return NULL;
}

static agraph_plugin_t plugin = {
    .abi = { AGRAPH_PLUGIN_ABI_MAJOR, AGRAPH_PLUGIN_ABI_MINOR },
    .name = "Huge counts fixture", .vendor = "AudioGraph tests", .version = "1.0",
    .node_type_count = 1, .node_types = fx_types,
};

static int is(const char *mode, const char *name) { return strcmp(mode, name) == 0; }

const agraph_plugin_t *agraph_plugin_entry(void) {
    memset(big_text, 'a', BIG);
    big_text[BIG] = 0;
    memset(unterminated, 'x', sizeof unterminated);
    memset(at_limit, 'b', AGRAPH_MAX_STRING);
    at_limit[AGRAPH_MAX_STRING] = 0;

    /* Start from the valid description, then tell the lie asked for. */
    plugin.name = "Huge counts fixture";
    plugin.node_type_count = 1;
    plugin.node_types = fx_types;
    plugin.get_extension = NULL;
    fx_type.type_id = "com.example.test-bounded";
    fx_type.summary = "A fixture type.";
    fx_type.param_count = 1;
    fx_param.summary = "A choice.";
    fx_param.choices = two_choices;
    fx_param.choice_count = 2;

    const char *mode = getenv("AGRAPH_TEST_HUGE_COUNTS");
    if (!mode || !mode[0] || is(mode, "node-types")) {
        plugin.node_type_count = HUGE_COUNT;
        plugin.node_types = NULL;
    } else if (is(mode, "node-table")) {
        plugin.node_type_count = HUGE_COUNT;
    } else if (is(mode, "params")) {
        fx_type.param_count = HUGE_COUNT;
    } else if (is(mode, "choices")) {
        fx_param.choice_count = HUGE_COUNT;
    } else if (is(mode, "unterminated")) {
        fx_type.type_id = unterminated;
    } else if (is(mode, "long-summary")) {
        fx_type.summary = big_text;
    } else if (is(mode, "long-name")) {
        plugin.name = big_text;
    } else if (is(mode, "long-details")) {
        plugin.get_extension = get_extension;
    } else if (is(mode, "at-limits")) {
        fx_type.summary = at_limit;
        fx_param.summary = at_limit;
        for (int i = 0; i < AGRAPH_MAX_CHOICES; i++) {
            choice_names[i][0] = 'c';
            int n = i, k = 1;
            char digits[6];
            int d = 0;
            do { digits[d++] = (char)('0' + n % 10); n /= 10; } while (n);
            while (d) choice_names[i][k++] = digits[--d];
            choice_names[i][k] = 0;
            many_choices[i] = choice_names[i];
        }
        many_choices[0] = at_limit;
        fx_param.choices = many_choices;
        fx_param.choice_count = AGRAPH_MAX_CHOICES;
    }
    return &plugin;
}
