/*
 * agraph/plugin.h — the core of the AudioGraph node-plugin ABI, version 2.0.
 *
 * C99, needs only <stdint.h> and <stddef.h>. The core is: the entry point,
 * the plugin descriptor, the node type (its static description and its
 * instance lifecycle), the process block, and the host table. Everything
 * else is an extension in a header of its own under ext/, found by a
 * string id (the CLAP way): include "agraph_plugin.h" for all of it.
 * docs/plugin-abi.md is the reference with examples.
 *
 *     init? ─▶ create ─▶ activate ─▶ { process | set_parameter }* ─▶ deactivate ─▶ destroy ─▶ deinit?
 *     [main]   [main]    [main]        [audio]   [audio]               [main]       [main]      [main]
 *
 * (A decoder, AGRAPH_DOMAIN_WORKER, has no `process`: ext/decoder.h.)
 *
 * ------------------------------------------------------------------------
 * Threads (each function's comment names one or more of these)
 * ------------------------------------------------------------------------
 * [main-thread]   The host's control thread: loads plugins, validates and
 *                 compiles graphs. May allocate, lock, do I/O. Never
 *                 concurrent with another [main-thread] call.
 * [audio-thread]  The realtime thread (the JACK process callback, the
 *                 offline render loop). Must not allocate, free, lock,
 *                 wait, log, print or do I/O; bounded time.
 * [worker-thread] The host's non-realtime helper (file reading, decoding).
 *                 May allocate; must not block for long.
 * [any-thread]    Thread-safe and realtime-safe.
 *
 * An instance is `!active` after create and after deactivate, `active`
 * between activate and deactivate. Calls on one instance never overlap,
 * except the [main-thread] notification of ext/output-route.h, which only
 * stores what it is told (atomically). Different instances are independent.
 *
 * ------------------------------------------------------------------------
 * Ownership
 * ------------------------------------------------------------------------
 * Everything reachable from agraph_plugin_entry() belongs to the plugin, is
 * immutable and stays valid until the library is unloaded (the host never
 * unloads a plugin while running). What the host passes to a call belongs
 * to the host and is valid during that call only, except the host table
 * given to `create` and the process block (see there). An instance belongs
 * to the plugin; the host holds it from `create` to `destroy`.
 *
 * ------------------------------------------------------------------------
 * Versioning: one scheme
 * ------------------------------------------------------------------------
 * - `agraph_plugin_t.abi` is the first field of the descriptor in every
 *   version, so any host can read it. The host loads a plugin whose major
 *   equals its own, and refuses any other major naming both versions.
 * - Within a major version the core structs and enums in this header are
 *   frozen: no field is appended, reordered or removed, no flag or enum
 *   value is added. What a host reads never depends on the minor version.
 * - Everything new is an extension: a struct of function pointers in its
 *   own header under ext/, looked up by a string id ("agraph.decoder/1").
 *   The number after '/' is the version of that struct, independent of the
 *   core's. A published extension struct is frozen; a changed one is a new
 *   struct under a new id (".../2"), and either side may offer both.
 *   A lookup of an id the other side does not know gives NULL, and the
 *   caller must cope (the extension is absent).
 * - The minor version counts header releases within a major (which
 *   extension headers exist); it is informational: shown by the host,
 *   never used to decide what to read.
 *
 * ------------------------------------------------------------------------
 * Audio, ports and layouts
 * ------------------------------------------------------------------------
 * Audio is non-interleaved 32-bit float at the graph's sample rate. A node
 * type declares 0…AGRAPH_MAX_PORTS input ports and 0…AGRAPH_MAX_PORTS
 * output ports, each a multichannel bus with its own channel rule. Every
 * per-port value (channels, buffers, stream state, layout tag) lives in
 * exactly one place: the per-port arrays of agraph_create_info_t and
 * agraph_process_t, port 0 included.
 *   - A direction with one port is called `in` / `out` in graphs; with
 *     several, each port is named by `agraph_port_t.name` (letters, digits,
 *     '_', unique in its direction) and links name it (`duck:sidechain`).
 *   - Every input port takes exactly one link.
 *   - AGRAPH_CHANNELS_FIXED outputs have `channels` channels;
 *     AGRAPH_CHANNELS_SAME_AS_INPUT outputs take input port 0's channel
 *     count and layout tag.
 * Layout tags (channel order): "mono" M; "stereo" L R; "binaural" L R for
 * headphones; "5.1" L R C LFE Ls Rs; "7.1" L R C LFE Ls Rs Lb Rb;
 * "discrete" any count, no positions. Treat an unknown tag as "discrete".
 */
#ifndef AGRAPH_CORE_PLUGIN_H
#define AGRAPH_CORE_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI this header describes. */
#define AGRAPH_PLUGIN_ABI_MAJOR 2
#define AGRAPH_PLUGIN_ABI_MINOR 0

/** The name of the one function a plugin library exports. */
#define AGRAPH_PLUGIN_ENTRY_SYMBOL "agraph_plugin_entry"

/** Size of the error buffers the host passes (bytes, including the NUL). */
#define AGRAPH_ERROR_CAPACITY 512

/* Limits the host enforces on what it reads (a plugin over them is refused
 * with the reason): node types, parameters per type, choices per parameter,
 * bytes of any string before its NUL (the plugin-info details have their
 * own), ports per direction. The library file is also checked before
 * dlopen (a complete ELF shared object for this machine). */
#define AGRAPH_MAX_NODE_TYPES 1024
#define AGRAPH_MAX_PARAMS 1024
#define AGRAPH_MAX_CHOICES 1024
#define AGRAPH_MAX_STRING 4096
#define AGRAPH_MAX_DETAILS 65536
#define AGRAPH_MAX_PORTS 64

/** A version: the plugin's (in the descriptor) or the host's (host table). */
typedef struct agraph_abi_version {
    uint32_t major;
    uint32_t minor;
} agraph_abi_version_t;

/* ======================================================================
 * Parameters
 * ====================================================================== */

typedef enum agraph_param_type {
    /** A real number; `min`/`max` bound it. */
    AGRAPH_PARAM_NUMBER = 0,
    /** A whole number, passed as a double holding an integer. */
    AGRAPH_PARAM_INTEGER = 1,
    /** Passed as 0.0 or 1.0. */
    AGRAPH_PARAM_BOOLEAN = 2,
    /** One of `choices`: passed as its index (`number`) and text (`string`). */
    AGRAPH_PARAM_CHOICE = 3,
    /** Free UTF-8 text. */
    AGRAPH_PARAM_STRING = 4
} agraph_param_type_t;

enum {
    /** May change while the graph renders: `set_parameter` is called
     *  ([audio-thread]; [worker-thread] for a decoder). NUMBER, INTEGER,
     *  BOOLEAN and CHOICE (the index) only. */
    AGRAPH_PARAM_LIVE = 1u << 0,
    /** A graph may leave it out; it is then passed with `is_set = 0`. */
    AGRAPH_PARAM_OPTIONAL = 1u << 1,
    /** No default: a graph must give it. */
    AGRAPH_PARAM_REQUIRED = 1u << 2,
    /** `min` and `max` are meaningful (NUMBER, INTEGER). */
    AGRAPH_PARAM_HAS_RANGE = 1u << 3,
    /** A STRING naming native code the plugin loads (a vendor's decoder).
     *  The host resolves it before the plugin sees it: a bare name is
     *  searched in the vendor-library folders configured outside any graph
     *  (AGRAPH_VENDOR_LIBRARY_PATH, $XDG_CONFIG_HOME/agraph/vendor-library-path);
     *  a path must lead into one of them; the plugin gets the real absolute
     *  path of a complete shared object, or the graph is invalid. Never
     *  with LIVE. */
    AGRAPH_PARAM_VENDOR_LIBRARY = 1u << 4
};

/** One parameter's static description. Owned by the plugin. */
typedef struct agraph_param {
    /** Name in graph files; ASCII, unique in the type. Never NULL. */
    const char *name;
    /** One sentence for `agraph nodes TYPE`. Never NULL. */
    const char *summary;
    /** Unit for display ("Hz", "dB"), or NULL. */
    const char *unit;
    /** An agraph_param_type_t. */
    uint32_t type;
    /** AGRAPH_PARAM_* flags. */
    uint32_t flags;
    double min;
    double max;
    /** Default of NUMBER, INTEGER, BOOLEAN (0/1), CHOICE (an index). */
    double default_number;
    /** Default of STRING, else NULL. */
    const char *default_string;
    /** CHOICE only: `choice_count` strings. */
    const char *const *choices;
    uint32_t choice_count;
    uint32_t reserved0;
} agraph_param_t;

/** One parameter value. Owned by the host, valid during the call. */
typedef struct agraph_param_value {
    /** 0 when an OPTIONAL parameter was left out. */
    uint32_t is_set;
    uint32_t reserved0;
    /** NUMBER, INTEGER, BOOLEAN (0/1), CHOICE (the index). */
    double number;
    /** STRING and CHOICE: the text; else NULL. */
    const char *string;
} agraph_param_value_t;

/* ======================================================================
 * Ports
 * ====================================================================== */

typedef enum agraph_channels_rule {
    /** Outputs: exactly `channels`. Inputs: `min_channels…max_channels`. */
    AGRAPH_CHANNELS_FIXED = 0,
    /** Outputs only: input port 0's channel count and layout tag. */
    AGRAPH_CHANNELS_SAME_AS_INPUT = 1
} agraph_channels_rule_t;

/** An audio port. Owned by the plugin. */
typedef struct agraph_port {
    /** With several ports in its direction, the name links use (never
     *  NULL then); with one, documentation (the graph says `in`/`out`). */
    const char *name;
    /** An agraph_channels_rule_t. */
    uint32_t channels_rule;
    /** Output, AGRAPH_CHANNELS_FIXED: 1…64. */
    uint32_t channels;
    /** Input: accepted channel counts, inclusive; max 0 = no limit. */
    uint32_t min_channels;
    uint32_t max_channels;
} agraph_port_t;

/* ======================================================================
 * Instances
 * ====================================================================== */

/** An instance, opaque to the host. */
typedef struct agraph_instance agraph_instance_t;

struct agraph_node_type;
struct agraph_host;

/** What `check`, `output_layout` and `create` learn about a node. Owned by
 *  the host, valid during the call (but see `host`). */
typedef struct agraph_create_info {
    /** The node type (one of the plugin's own). */
    const struct agraph_node_type *type;
    /** The node's id in the graph (for messages). */
    const char *node_id;
    /** The host table for this node, never NULL. From `create` it belongs
     *  to the new instance: valid until `destroy` returns, keep it. In
     *  `check` and `output_layout` it is valid during the call only. */
    const struct agraph_host *host;
    /** One value per entry of `type->params`, in order, type-checked,
     *  range-checked and defaulted by the host. */
    const agraph_param_value_t *values;
    uint32_t value_count;
    /** The ports: `input_port_count` is the type's `input_count` (0 for a
     *  decoder, whose input is compressed frames), `output_port_count` its
     *  `output_count`. */
    uint32_t input_port_count;
    uint32_t output_port_count;
    uint32_t reserved0;
    /** The graph's sample rate in Hz. */
    double sample_rate;
    /** Channels reaching each input port (0 while not known) and each
     *  output's channels by its rule, in port order; NULL when the count
     *  is 0. */
    const uint32_t *input_port_channels;
    const uint32_t *output_port_channels;
    /** The layout tag reaching each input port, in port order; an entry is
     *  NULL while that input is not known; NULL when input_port_count is 0.
     *  Copy what you keep. */
    const char *const *input_port_layouts;
} agraph_create_info_t;

/** One input port in a process block. */
typedef struct agraph_input_port_buffers {
    uint32_t channels;
    /** Frames of real signal this block (the rest are zero), and whether
     *  the stream reaching the port has ended. */
    uint32_t valid_frames;
    uint32_t ended;
    uint32_t reserved0;
    /** `channels` read-only buffers of `frames` samples (NULL for 0). */
    const float *const *buffers;
} agraph_input_port_buffers_t;

/** One output port in a process block. */
typedef struct agraph_output_port_buffers {
    uint32_t channels;
    /** The port's stream state: preset by the host before `process` (to
     *  the longest valid span of the inputs, ended when every input has
     *  ended; a source: `frames`, 0), and written by the plugin when it
     *  differs (a source that ends: the frames that carry signal, 1). The
     *  host zeroes the output past `valid_frames`. */
    uint32_t valid_frames;
    uint32_t ended;
    uint32_t reserved0;
    /** `channels` buffers of at least `frames` samples (NULL for 0). */
    float *const *buffers;
} agraph_output_port_buffers_t;

/** One block. Owned by the host, allocated at activation; its pointers stay
 *  valid while active, but the plugin reads and writes them only during
 *  `process`. */
typedef struct agraph_process {
    /** Frames to process: 1 … max_frames of `activate`. */
    uint32_t frames;
    /** The type's input_count and output_count. */
    uint32_t input_port_count;
    uint32_t output_port_count;
    uint32_t reserved0;
    /** Every port in port order, NULL when its count is 0. */
    const agraph_input_port_buffers_t *input_ports;
    agraph_output_port_buffers_t *output_ports;
} agraph_process_t;

typedef enum agraph_domain {
    /** `process` runs on the audio thread. */
    AGRAPH_DOMAIN_REALTIME = 0,
    /** The work runs on the worker thread through an extension
     *  (ext/decoder.h); `process` is NULL. */
    AGRAPH_DOMAIN_WORKER = 1
} agraph_domain_t;

enum {
    /** A source that never ends. */
    AGRAPH_NODE_ENDLESS = 1u << 0,
    /** The node virtualizes (renders speaker signals for headphones): the
     *  host refuses any link carrying "binaural" into its inputs. Name the
     *  output "binaural" (`output_layout`); `agraph check-plugin` notes a
     *  virtualizer that does not. */
    AGRAPH_NODE_VIRTUALIZES = 1u << 1
};

/** A node type: its static description and its instance functions.
 *  Owned by the plugin, immutable. */
typedef struct agraph_node_type {
    /** Unique id in graph files: letters, digits, '.', '-', '_'. */
    const char *type_id;
    /** One sentence for `agraph nodes`. Never NULL. */
    const char *summary;
    /** An agraph_domain_t. */
    uint32_t domain;
    /** AGRAPH_NODE_* flags. */
    uint32_t flags;
    /** Ports, 0…AGRAPH_MAX_PORTS each way (a decoder: 1 and 1). */
    uint32_t input_count;
    uint32_t output_count;
    const agraph_port_t *inputs;
    const agraph_port_t *outputs;
    /** Parameters; the index in this array is set_parameter's index. */
    uint32_t param_count;
    uint32_t reserved0;
    const agraph_param_t *params;
    /** AGRAPH_DOMAIN_WORKER: the codecs its input takes, separated by
     *  single spaces ("aac ac3 eac3", "ac4-sync ac4-raw"; the `media`
     *  source's names are FFmpeg's). NULL for audio input. [main-thread] */
    const char *input_codec;
    /** The plugin's own (the Swift kit keeps its type here). */
    void *plugin_data;

    /** Optional: refuses a parameter combination, channel count or input
     *  layout beyond the static description. 1 when fine; 0 after writing
     *  a one-line reason into `error`. Must not keep `info`.
     *  [main-thread] */
    int32_t (*check)(const agraph_create_info_t *info, char *error, uint32_t error_capacity);

    /** Optional: the layout tag of output port `port` (0 … output_count-1)
     *  for this configuration, a static string; NULL (function or result):
     *  the usual layout for the channel count (SAME_AS_INPUT: input 0's).
     *  Must not keep `info`. [main-thread] */
    const char *(*output_layout)(const agraph_create_info_t *info, uint32_t port);

    /** A new instance (!active), or NULL after writing a reason into
     *  `error`. May allocate. Copy what it keeps of `info` (not the host
     *  table, which it may keep). [main-thread] */
    agraph_instance_t *(*create)(const agraph_create_info_t *info, char *error, uint32_t error_capacity);

    /** Allocates everything processing needs; `max_frames` bounds
     *  `frames`. 1 on success; 0 after writing a reason.
     *  [main-thread & !active] → active */
    int32_t (*activate)(agraph_instance_t *instance, double sample_rate, uint32_t max_frames,
                        char *error, uint32_t error_capacity);

    /** One block: reads the input ports, writes every channel of every
     *  output port for `frames` frames, may write the outputs' state. NULL
     *  only for AGRAPH_DOMAIN_WORKER. [audio-thread & active] */
    void (*process)(agraph_instance_t *instance, agraph_process_t *block);

    /** Changes a LIVE parameter (range-checked), from the next block; never
     *  during `process`. NULL when no parameter is LIVE.
     *  [audio-thread & active]; for AGRAPH_DOMAIN_WORKER
     *  [worker-thread & active], between two decode calls. */
    void (*set_parameter)(agraph_instance_t *instance, uint32_t index, double value);

    /** Optional: frames by which the output lags the input.
     *  [main-thread & active] */
    uint32_t (*latency)(const agraph_instance_t *instance);

    /** Ends processing; activate may follow. [main-thread & active] → !active */
    void (*deactivate)(agraph_instance_t *instance);

    /** Frees the instance (deactivated first). [main-thread & !active] */
    void (*destroy)(agraph_instance_t *instance);

    /** Optional: this instance's extension `id` (ext/*.h, AGRAPH_EXT_*),
     *  or NULL when it has none (any id it does not know). The struct
     *  stays valid until destroy. [main-thread] */
    const void *(*get_extension)(const agraph_instance_t *instance, const char *id);
} agraph_node_type_t;

/* ======================================================================
 * The plugin
 * ====================================================================== */

/** What `agraph_plugin_entry` returns. Owned by the plugin, immutable. */
typedef struct agraph_plugin {
    /** FIRST, in every version: { AGRAPH_PLUGIN_ABI_MAJOR,
     *  AGRAPH_PLUGIN_ABI_MINOR }. A host reads nothing else of a plugin of
     *  another major. */
    agraph_abi_version_t abi;
    /** The plugin's name, vendor and version (not the ABI's). Never NULL. */
    const char *name;
    const char *vendor;
    const char *version;
    uint32_t node_type_count;
    uint32_t reserved0;
    const agraph_node_type_t *const *node_types;

    /** Optional: library-wide set-up, once per process, right after the
     *  host read `abi` and before anything else of the plugin is used.
     *  `plugin_path`: the library's absolute path. 1 when fine; 0 after
     *  writing a reason (the host refuses the library and calls nothing
     *  else, not deinit either). Keep it quick. [main-thread] */
    int32_t (*init)(const char *plugin_path, char *error, uint32_t error_capacity);

    /** Optional: undoes init, after every instance was destroyed. Only a
     *  host done with the library for good calls it (`agraph
     *  check-plugin`); graph commands end without it. [main-thread] */
    void (*deinit)(void);

    /** Optional: a plugin-wide extension (ext/plugin-info.h) by id, or
     *  NULL for any id it does not know. [main-thread] */
    const void *(*get_extension)(const char *id);
} agraph_plugin_t;

/** The one exported function: called once after dlopen, before anything
 *  else; NULL when the plugin cannot work on this system. [main-thread] */
typedef const agraph_plugin_t *(*agraph_plugin_entry_fn)(void);
const agraph_plugin_t *agraph_plugin_entry(void);

/* ======================================================================
 * The host table
 * ====================================================================== */

/** Given to every `check`, `output_layout` and `create` (one per node, so
 *  that what the plugin says is about that node). The plugin looks host
 *  extensions up by id (AGRAPH_HOST_EXT_*, ext/*.h), ideally once in
 *  create, and keeps the pointers: they are valid as long as the table.
 *
 *    info->host->get_extension(info->host, AGRAPH_HOST_EXT_LOG) ─▶ agraph_host_log_t
 */
typedef struct agraph_host {
    /** The host's ABI version. */
    agraph_abi_version_t abi;
    /** The host's own; the plugin never touches it. */
    void *host_data;
    /** The host's name and version ("agraph", "0.1.0"). Never NULL. */
    const char *name;
    const char *version;
    /** A host extension by id, or NULL when the host has none by that id.
     *  No allocation or lock. [any-thread] */
    const void *(*get_extension)(const struct agraph_host *host, const char *id);
} agraph_host_t;

#ifdef __cplusplus
}
#endif

#endif /* AGRAPH_CORE_PLUGIN_H */
