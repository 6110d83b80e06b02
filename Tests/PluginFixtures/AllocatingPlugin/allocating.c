/*
 * Test fixture: a well-formed ABI 2.0 plugin that breaks the audio-thread
 * rule: its `process` mallocs and frees a scratch buffer on every call.
 * `agraph check-plugin` must fail it, saying so. Everything else is right.
 */
#include "allocating.h"
#include "../../../Sources/CAGraphPlugin/include/agraph_plugin.h"

#include <stdlib.h>
#include <string.h>

typedef struct gain_node { float gain; } gain_node;

/* Where the scratch pointer goes, so that the compiler keeps the malloc. */
void *volatile agraph_test_allocating_sink;

static agraph_instance_t *create(const agraph_create_info_t *info, char *error, uint32_t capacity) {
    (void)info; (void)error; (void)capacity;
    gain_node *n = calloc(1, sizeof *n);
    if (n) n->gain = 0.5f;
    return (agraph_instance_t *)n;
}

static int32_t activate(agraph_instance_t *instance, double rate, uint32_t max_frames, char *error, uint32_t capacity) {
    (void)instance; (void)rate; (void)max_frames; (void)error; (void)capacity;
    return 1;
}

static void process(agraph_instance_t *instance, agraph_process_t *block) {
    gain_node *n = (gain_node *)instance;
    /* THE BUG: a heap allocation on the audio thread. */
    float *scratch = malloc(sizeof(float) * (block->frames + 1));
    agraph_test_allocating_sink = scratch;
    const agraph_input_port_buffers_t *in = &block->input_ports[0];
    agraph_output_port_buffers_t *out = &block->output_ports[0];
    for (uint32_t c = 0; c < out->channels; c++)
        for (uint32_t i = 0; i < block->frames; i++) out->buffers[c][i] = in->buffers[c][i] * n->gain;
    free(scratch);
}

static void deactivate(agraph_instance_t *instance) { (void)instance; }
static void destroy(agraph_instance_t *instance) { free(instance); }

static const agraph_port_t input = { "in", AGRAPH_CHANNELS_FIXED, 0, 1, 8 };
static const agraph_port_t output = { "out", AGRAPH_CHANNELS_SAME_AS_INPUT, 0, 0, 0 };

static const agraph_node_type_t type = {
    .type_id = "com.example.test.allocating-gain",
    .summary = "Halves the signal, allocating in process (test fixture: must fail check-plugin).",
    .domain = AGRAPH_DOMAIN_REALTIME,
    .input_count = 1, .output_count = 1, .inputs = &input, .outputs = &output,
    .param_count = 0, .params = NULL,
    .create = create, .activate = activate, .process = process,
    .deactivate = deactivate, .destroy = destroy,
};

static const agraph_node_type_t *const types[] = { &type };

static const agraph_plugin_t plugin = {
    .abi = { AGRAPH_PLUGIN_ABI_MAJOR, AGRAPH_PLUGIN_ABI_MINOR },
    .name = "Allocating gain (test fixture)", .vendor = "AudioGraph tests", .version = "1.0",
    .node_type_count = 1, .node_types = types,
};

const agraph_plugin_t *agraph_plugin_entry(void) { return &plugin; }
