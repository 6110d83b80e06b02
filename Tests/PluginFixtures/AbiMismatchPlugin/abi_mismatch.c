/*
 * Test fixture: a plugin built for the previous ABI, 1.4. Its descriptor
 * is the 1.x one, declared here as it was (this repository's headers are
 * 2.0): the version first, then name, vendor, version, the node types and
 * the 1.x tail. The host must refuse it after reading the version alone,
 * naming both versions (1.4 and its own), and must call nothing of it.
 */
#include "abi_mismatch.h"
#include <stddef.h>
#include <stdint.h>

/* The ABI 1.4 descriptor, field for field (agraph_plugin.h 1.4). */
typedef struct abi14_version { uint32_t major; uint32_t minor; } abi14_version_t;
typedef struct abi14_plugin {
    abi14_version_t abi;
    const char *name;
    const char *vendor;
    const char *version;
    uint32_t node_type_count;
    uint32_t reserved0;
    const void *const *node_types;
    const void *(*get_extension)(const char *id);
    int32_t (*init)(const char *plugin_path, char *error, uint32_t error_capacity);
    void (*deinit)(void);
} abi14_plugin_t;

/* Called only if the host went past the version, which it must not: the
 * refusal would then read "its init failed: …" and the tests say so. */
static int32_t must_not_run(const char *plugin_path, char *error, uint32_t error_capacity) {
    static const char text[] = "the host called init of a 1.4 plugin";
    (void)plugin_path;
    for (uint32_t i = 0; error && i < error_capacity; i++) {
        error[i] = i < sizeof text ? text[i] : 0;
        if (!error[i]) break;
    }
    if (error && error_capacity) error[error_capacity - 1] = 0;
    return 0;
}

static const abi14_plugin_t plugin = {
    { 1, 4 },
    "ABI 1.4 fixture", "AudioGraph tests", "1.0",
    0, 0, NULL, NULL, must_not_run, NULL,
};

const void *agraph_plugin_entry(void) { return &plugin; }
