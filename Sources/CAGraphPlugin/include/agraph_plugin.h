/*
 * agraph_plugin.h — the AudioGraph node-plugin ABI, version 1.4.
 *
 * This header is the single source of truth for the ABI. It is C99, needs
 * nothing but <stdint.h> and <stddef.h>, and is all a C plugin needs.
 * Swift plugins use the `AGraphPluginKit` module, which builds these tables.
 *
 * ------------------------------------------------------------------------
 * Overview
 * ------------------------------------------------------------------------
 * A plugin is a shared library (`libAGraph<Name>.so`) that exports one C
 * function, `agraph_plugin_entry`, returning a static `agraph_plugin_t`.
 * That descriptor starts with the ABI version; the host reads the version
 * before anything else and refuses the library when the major version is
 * not the one it was built for.
 *
 * The plugin describes each node type it provides statically
 * (`agraph_node_type_t`: type id, ports, parameters), apart from any
 * instance, so that the host can list, document and validate graphs
 * without creating anything (like a LADSPA/PipeWire descriptor). Instances
 * are created only when a validated graph is compiled:
 *
 *     init? ─▶ create ──▶ activate ──▶ { process | set_parameter }* ──▶ deactivate ──▶ destroy
 *     [main]   [main]     [main]          [audio]   [audio]              [main]        [main]
 *
 * (A decoder, AGRAPH_DOMAIN_WORKER, has no `process`: its `decode` and
 * `set_parameter` run on the worker thread instead; see AGRAPH_EXT_DECODER.)
 *
 * Since 1.2 the host hands every call that gets an `agraph_create_info_t`
 * its host table (`agraph_host_t`, the CLAP `clap_host_t` way): the
 * plugin asks it for host extensions (log, output route, latency, thread
 * check) by id. `init`/`deinit` in the descriptor let a plugin set up what
 * it shares between instances once per process.
 *
 * Since 1.4 a node learns the layout tag of each input (which of 6
 * channels is the LFE, or whether they are discrete) in what `check`,
 * `output_layout`, `output_port_layout` and `create` see
 * (`agraph_create_info_t.input_port_layouts`), and a node type can declare
 * that it virtualizes for headphones (AGRAPH_NODE_VIRTUALIZES), so that
 * the host refuses binaural input to it: a renderer can be a plugin.
 *
 * ------------------------------------------------------------------------
 * Threads and states (used in every function's comment, the CLAP way)
 * ------------------------------------------------------------------------
 * [main-thread]   The host's control thread that loads plugins, validates
 *                 and compiles graphs. Calls on it may allocate, lock, do
 *                 I/O. Never concurrent with another [main-thread] call.
 * [audio-thread]  The realtime thread that renders blocks (the JACK process
 *                 callback, or the offline renderer's loop). Calls on it
 *                 must not allocate, free, lock, wait, sleep, log, print or
 *                 do I/O, and must finish in bounded time.
 * [worker-thread] The host's non-realtime helper thread (file reading,
 *                 decoding: a decoder's `decode`, `flush` and
 *                 `set_parameter`). May allocate; must not block for long.
 * [any-thread]    Thread-safe and realtime-safe.
 *
 * States of an instance: `!active` after create and after deactivate;
 * `active` between activate and deactivate. [audio-thread] calls happen
 * only while active, one at a time, never concurrently with any other call
 * on the same instance, with one exception: the [main-thread] notification
 * of 1.2 (`agraph_output_route_ext_t.changed`) may arrive while the instance
 * processes on another thread; it only stores what it is told (atomically)
 * for the next process or decode call to apply. A plugin can ask which
 * thread it is on through the host extension AGRAPH_HOST_EXT_THREAD_CHECK. Different instances are independent: the host may
 * call them from different threads at the same time.
 *
 * ------------------------------------------------------------------------
 * Ownership
 * ------------------------------------------------------------------------
 * - Everything reachable from `agraph_plugin_entry()` (descriptor, node
 *   types, ports, parameters, strings) belongs to the plugin, is immutable,
 *   and must stay valid until the library is unloaded. The host may keep
 *   pointers to it; the host never writes to it and never frees it.
 *   (The host does not dlclose plugin libraries while running.)
 * - Pointers the host passes to a function (parameter values, strings,
 *   the process block, channel arrays, error buffers) belong to the host and
 *   are valid only for the duration of that call unless stated otherwise.
 *   Channel buffers are the exception: see `agraph_process_t`.
 * - An instance belongs to the plugin; the host holds the opaque pointer
 *   from `create` until it passes it to `destroy`.
 *
 * ------------------------------------------------------------------------
 * Versioning: tables only grow by appending
 * ------------------------------------------------------------------------
 * - A change that breaks existing plugins bumps AGRAPH_PLUGIN_ABI_MAJOR.
 *   The host loads only plugins whose major equals its own.
 * - New fields, new function pointers, new enum values and new extensions
 *   bump AGRAPH_PLUGIN_ABI_MINOR. New fields are only ever appended at the
 *   end of a struct; nothing is reordered, resized or removed within a
 *   major version.
 * - Plugin structs (descriptor, node type): a field appended in minor N is
 *   read by the host only when the plugin's `abi.minor >= N` (older
 *   plugins' structs end before it). A plugin built against a newer minor
 *   than the host is accepted: the host ignores the fields it does not know.
 * - Host structs (`agraph_create_info_t`): the other way round. The host
 *   states its minor in `agraph_create_info_t.host_abi_minor`; a plugin
 *   reads a field appended in minor N only when `host_abi_minor >= N`
 *   (hosts before 1.2 wrote 0 there, when the field was still reserved).
 * - Extensions, the plugin's and the host's alike, are looked up by id
 *   string (`get_extension`). THE RULE: an extension's struct is frozen
 *   once published, in every minor version: it is never appended to. A
 *   changed extension is a new struct under a new id (".../2"), and a
 *   plugin or host may offer both ids. (Extensions are not versioned by
 *   abi.minor.)
 *
 * ------------------------------------------------------------------------
 * Audio format
 * ------------------------------------------------------------------------
 * Audio is non-interleaved 32-bit float, one buffer per channel, at the
 * graph's sample rate (which a node never changes). No input: a source.
 * No output: a sink.
 *
 * Ports. Before 1.2 a node has at most one audio input port and one audio
 * output port, which the graph calls `in` and `out`. Since 1.2 (a plugin
 * whose abi.minor >= 2) a node type may declare up to AGRAPH_MAX_PORTS
 * inputs and AGRAPH_MAX_PORTS outputs, each a multichannel bus with its
 * own channel rule and layout (a sidechain input, a split into groups):
 *   - THE NAMING RULE: a direction with one port is called `in` / `out` in
 *     graphs whatever `agraph_port_t.name` says (so graphs stay valid); a
 *     direction with several ports is named by `agraph_port_t.name`: never
 *     NULL, letters, digits and '_', unique within that direction
 *     (`"links": [{"from": "src", "to": "duck:sidechain"}]`). A node with
 *     several outputs has no default output: links name one.
 *   - Every input port takes exactly one link (there are no optional ports).
 *   - Port 0 of each direction is the one the 1.0/1.1 fields describe
 *     (`input_channels`, `inputs`, … in `agraph_process_t` and
 *     `agraph_create_info_t`); the per-port fields appended in 1.2 describe
 *     every port, port 0 included (see `agraph_process_t`).
 * The output format rule (`agraph_port_t.channels_rule`):
 *   - AGRAPH_CHANNELS_FIXED: `channels` channels, with the default layout
 *     for that count (1 mono, 2 stereo, 6 5.1, 8 7.1, else discrete);
 *   - AGRAPH_CHANNELS_SAME_AS_INPUT: the channel count *and* layout tag of
 *     input port 0 pass through (processors only).
 * `output_layout` (1.1) names port 0's layout; `output_port_layout` (1.2)
 * any port's.
 * An input port accepts `min_channels … max_channels` channels (0 for
 * max_channels: no upper limit); the host checks this when validating a
 * graph and reports a mismatch as an error on that link.
 *
 * Layout tags. Every stream carries a tag saying what its channels mean;
 * the tags are these strings, and the channels come in this order:
 *     "mono"       M
 *     "stereo"     L R
 *     "binaural"   L R, already rendered for headphones (ears, not speakers)
 *     "5.1"        L R C LFE Ls Rs
 *     "7.1"        L R C LFE Ls Rs Lb Rb
 *     "discrete"   any count, no spatial meaning (positions unknown)
 * A plugin names its outputs' tags (`output_layout`, `output_port_layout`)
 * and, since 1.4, reads its inputs' (`input_port_layouts`). A node type
 * flagged AGRAPH_NODE_VIRTUALIZES (1.4) never receives "binaural" from a
 * 1.4 host: it refuses such a link when it validates the graph, so nothing
 * is virtualized twice (a host before 1.4 does not know the flag: a
 * virtualizer that must never see "binaural" refuses it in `check` too).
 * Treat a tag you do not know (from a later host) as "discrete".
 */
#ifndef AGRAPH_PLUGIN_H
#define AGRAPH_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI this header describes. */
#define AGRAPH_PLUGIN_ABI_MAJOR 1
#define AGRAPH_PLUGIN_ABI_MINOR 4

/** The name of the one function a plugin library exports. */
#define AGRAPH_PLUGIN_ENTRY_SYMBOL "agraph_plugin_entry"

/** Size of the error buffers the host passes (bytes, including the NUL). */
#define AGRAPH_ERROR_CAPACITY 512

/*
 * Limits the host enforces on what it reads from a plugin (a plugin over
 * them is refused with the reason, and none of its node types is used):
 *   - the library file itself is checked before dlopen: a regular file, an
 *     ELF shared object (ET_DYN) of the host's class, byte order and
 *     machine, whose header tables, segments and sections all lie inside
 *     the file (a truncated copy is refused, not mapped);
 *   - at most AGRAPH_MAX_NODE_TYPES node types, AGRAPH_MAX_PARAMS
 *     parameters per type and AGRAPH_MAX_CHOICES choices per parameter;
 *   - every string (ids, names, summaries, units, choices, defaults, the
 *     plugin's name, vendor and version, the input codec) at most
 *     AGRAPH_MAX_STRING bytes before its NUL; the plugin-info details
 *     (AGRAPH_EXT_PLUGIN_INFO) at most AGRAPH_MAX_DETAILS bytes.
 */
#define AGRAPH_MAX_NODE_TYPES 1024
#define AGRAPH_MAX_PARAMS 1024
#define AGRAPH_MAX_CHOICES 1024
#define AGRAPH_MAX_STRING 4096
#define AGRAPH_MAX_DETAILS 65536
/** (1.2) Most input ports, and most output ports, of one node type. */
#define AGRAPH_MAX_PORTS 64

/* ======================================================================
 * Parameters
 * ====================================================================== */

/** A parameter's type, as a graph file writes it. Append-only. */
typedef enum agraph_param_type {
    /** A real number; `min`/`max` bound it, `default_number` is its default. */
    AGRAPH_PARAM_NUMBER = 0,
    /** A whole number; `min`/`max` bound it. Passed as a double holding an integer. */
    AGRAPH_PARAM_INTEGER = 1,
    /** true/false; passed as 0.0 or 1.0. */
    AGRAPH_PARAM_BOOLEAN = 2,
    /** One of `choices` (strings); passed as the index of the choice
     *  (in `number`) and the choice itself (in `string`). */
    AGRAPH_PARAM_CHOICE = 3,
    /** Free text (UTF-8); `default_string` is its default. */
    AGRAPH_PARAM_STRING = 4
} agraph_param_type_t;

/** Flags of a parameter (bit set). Append-only. */
enum {
    /** The value may change while the graph renders (`node.param` in
     *  `agraph run`): the host then calls `set_parameter` on the audio
     *  thread (worker thread for decoders). NUMBER, INTEGER and BOOLEAN
     *  parameters may be live; since 1.1 also CHOICE (the value passed is
     *  the index of the choice). STRING parameters never are. */
    AGRAPH_PARAM_LIVE = 1u << 0,
    /** A graph may leave the parameter out and it stays absent (no
     *  default): the host passes `is_set = 0`. */
    AGRAPH_PARAM_OPTIONAL = 1u << 1,
    /** The parameter has no default: a graph must give it. Wins over the
     *  default fields. */
    AGRAPH_PARAM_REQUIRED = 1u << 2,
    /** `min` and `max` are meaningful (NUMBER and INTEGER). */
    AGRAPH_PARAM_HAS_RANGE = 1u << 3,
    /** (1.2) A STRING parameter naming a vendor library: native code the
     *  plugin loads for the node (e.g. a licensee's decoder). Graph files
     *  are data and never choose which code runs, so the host resolves the
     *  value before `check`, `create` or `output_layout` see it: a bare file
     *  name is searched in the vendor-library folders the user configured
     *  outside any graph (AGRAPH_VENDOR_LIBRARY_PATH, then
     *  $XDG_CONFIG_HOME/agraph/vendor-library-path); a value with a '/'
     *  (relative to the graph's folder) must lead, symbolic links
     *  resolved, into one of those folders; the file must be a regular,
     *  complete shared object. The plugin then receives the real absolute
     *  path; otherwise the graph is invalid, with the reason on this
     *  parameter, and nothing is loaded. A plugin must load native code
     *  named by a graph only through such a parameter (what it finds by
     *  itself, from its own environment variables or the loader's usual
     *  folders, is its own affair). The flag is refused on any other type
     *  and never combines with LIVE. */
    AGRAPH_PARAM_VENDOR_LIBRARY = 1u << 4
};

/** The static description of one parameter. Owned by the plugin. */
typedef struct agraph_param {
    /** Name in the graph file (`"params": {"rate": 5}`), ASCII, unique
     *  within the node type. Never NULL. */
    const char *name;
    /** One sentence for `agraph nodes TYPE`. Never NULL. */
    const char *summary;
    /** Unit for display ("Hz", "dB", "s", "%"), or NULL. */
    const char *unit;
    /** An agraph_param_type_t value. */
    uint32_t type;
    /** AGRAPH_PARAM_* flags. */
    uint32_t flags;
    /** Inclusive range, when flags has AGRAPH_PARAM_HAS_RANGE. */
    double min;
    double max;
    /** Default for NUMBER, INTEGER, BOOLEAN (0/1) and CHOICE (an index
     *  into `choices`). */
    double default_number;
    /** Default for STRING (UTF-8), else NULL. */
    const char *default_string;
    /** CHOICE only: `choice_count` strings, else NULL / 0. */
    const char *const *choices;
    uint32_t choice_count;
    uint32_t reserved0;
} agraph_param_t;

/** One parameter value passed to `create` and `check`. Owned by the host. */
typedef struct agraph_param_value {
    /** 0 when an OPTIONAL parameter was left out; 1 otherwise. */
    uint32_t is_set;
    uint32_t reserved0;
    /** NUMBER, INTEGER, BOOLEAN (0/1), CHOICE (the index). */
    double number;
    /** STRING and CHOICE: the text, NUL-terminated UTF-8; else NULL.
     *  Valid only during the call. */
    const char *string;
} agraph_param_value_t;

/* ======================================================================
 * Ports
 * ====================================================================== */

/** How a port's channel count is decided. Append-only. */
typedef enum agraph_channels_rule {
    /** Exactly `channels` channels (outputs); `min_channels…max_channels`
     *  are accepted (inputs). */
    AGRAPH_CHANNELS_FIXED = 0,
    /** Output only: as many channels as the input, same layout tag. */
    AGRAPH_CHANNELS_SAME_AS_INPUT = 1
} agraph_channels_rule_t;

/** An audio port. Owned by the plugin. */
typedef struct agraph_port {
    /** The port's name. With one port in its direction the graph calls it
     *  `in` / `out` and this is documentation (may be NULL); with several
     *  (ABI 1.2) it is the name links use: never NULL, letters, digits and
     *  '_', unique within the direction (see "Ports" above). */
    const char *name;
    /** An agraph_channels_rule_t value. */
    uint32_t channels_rule;
    /** Output with AGRAPH_CHANNELS_FIXED: the channel count (1…64). */
    uint32_t channels;
    /** Input: the accepted channel counts, inclusive; max 0 = no limit. */
    uint32_t min_channels;
    uint32_t max_channels;
} agraph_port_t;

/* ======================================================================
 * Instances
 * ====================================================================== */

/** An instance, opaque to the host; the plugin defines it. */
typedef struct agraph_instance agraph_instance_t;

struct agraph_node_type;

/** What `create` (and `check`) learn about the node. Owned by the host,
 *  valid only during the call. */
struct agraph_host;

typedef struct agraph_create_info {
    /** The node type being instantiated (one of the plugin's own). */
    const struct agraph_node_type *type;
    /** The node's id in the graph (for messages). */
    const char *node_id;
    /** One value per entry of `type->params`, in that order, type-checked,
     *  range-checked and defaulted by the host. */
    const agraph_param_value_t *values;
    uint32_t value_count;
    /** Channels reaching the input port (0 for a source). */
    uint32_t input_channels;
    /** Channels of the output port, by the port's rule (0 for a sink). */
    uint32_t output_channels;
    /** (1.2; reserved before, and 0 in every host of 1.0 and 1.1) The
     *  host's AGRAPH_PLUGIN_ABI_MINOR. This is how a plugin knows which
     *  fields below exist: a field appended in minor N is there only when
     *  `host_abi_minor >= N`. */
    uint32_t host_abi_minor;
    /** The graph's sample rate in Hz (also passed to activate). */
    double sample_rate;

    /* ---- ABI 1.2: read only when host_abi_minor >= 2 ---- */

    /** The host table for this node (never NULL from a 1.2 host): host
     *  extensions by id. In `create` it belongs to the new instance: it stays
     *  valid until `destroy` returns, and the plugin may keep the pointer
     *  (unlike the rest of `info`). In `check` and `output_layout` it is
     *  valid only during the call. */
    const struct agraph_host *host;

    /** (1.2) The node's ports and their channel counts, in port order:
     *  `input_port_count` entries of `input_port_channels` (the channels
     *  reaching each input; 0 when not yet known) and `output_port_count`
     *  of `output_port_channels` (each output's channels by its rule).
     *  Entry 0 equals `input_channels` / `output_channels`. NULL when the
     *  count is 0. Valid only during the call. */
    uint32_t input_port_count;
    uint32_t output_port_count;
    const uint32_t *input_port_channels;
    const uint32_t *output_port_channels;

    /* ---- ABI 1.4: read only when host_abi_minor >= 4 ---- */

    /** (1.4) The layout tag of the stream reaching each input port, in
     *  port order: `input_port_count` strings ("mono", "stereo",
     *  "binaural", "5.1", "7.1", "discrete"; see "Layout tags" above for
     *  the channel order each implies), so a node knows which channel is
     *  which (the LFE of a 5.1 input) or that it cannot know ("discrete").
     *  An entry is NULL while its input is not known (as its
     *  `input_port_channels` entry is then 0); the array is NULL when
     *  `input_port_count` is 0 (a source, a decoder fed compressed frames).
     *  Given to `check`, `output_layout`, `output_port_layout` and `create`
     *  alike; owned by the host, valid only during the call (copy what you
     *  keep). A host before 1.4 gives no tags: a plugin then assumes the
     *  usual layout for each input's channel count, as those hosts did.
     *  [main-thread, during the call] */
    const char *const *input_port_layouts;

    /* Fields appended in later minor versions go here. */
} agraph_create_info_t;

/** (1.2) One input port's buffers in `agraph_process_t.input_ports`. */
typedef struct agraph_input_port_buffers {
    /** Channels of the port. */
    uint32_t channels;
    /** Frames of real signal this block (the rest are zero), and whether
     *  the stream reaching the port has ended. */
    uint32_t valid_frames;
    uint32_t ended;
    uint32_t reserved0;
    /** `channels` read-only buffers of `frames` samples, or NULL. */
    const float *const *buffers;
} agraph_input_port_buffers_t;

/** (1.2) One output port's buffers in `agraph_process_t.output_ports`. */
typedef struct agraph_output_port_buffers {
    /** Channels of the port. */
    uint32_t channels;
    /** The port's stream state, preset by the host and optionally written
     *  by the plugin, as `output_valid_frames` / `output_ended` are for
     *  port 0 (see there). */
    uint32_t valid_frames;
    uint32_t ended;
    uint32_t reserved0;
    /** `channels` buffers of at least `frames` samples, or NULL. */
    float *const *buffers;
} agraph_output_port_buffers_t;

/** One block for `process`. Owned by the host, which allocates it once at
 *  activation; its pointers stay valid while the instance is active, but
 *  the plugin must only read or write through them during `process`. */
typedef struct agraph_process {
    /** Frames to process: 1 … max_frames of `activate`. */
    uint32_t frames;
    /** Channel counts of the ports (as in create_info). */
    uint32_t input_channels;
    uint32_t output_channels;
    uint32_t reserved0;
    /** input_channels read-only buffers of `frames` samples, or NULL. */
    const float *const *inputs;
    /** output_channels buffers of at least `frames` samples, or NULL. */
    float *const *outputs;
    /** Frames of real signal in the input this block (the rest are zero),
     *  and whether the input stream has ended. */
    uint32_t input_valid_frames;
    uint32_t input_ended;
    /** Written by the plugin (optional): the host presets them to the
     *  input's values (a source: frames, 0). A source that ends sets
     *  `output_ended = 1` and `output_valid_frames` to the frames of the
     *  last block that carry signal; the host zeroes the output past
     *  `output_valid_frames`. */
    uint32_t output_valid_frames;
    uint32_t output_ended;

    /* ---- ABI 1.2: present when the create info's host_abi_minor >= 2 ---- */

    /** Every port, port 0 included, in port order: `input_port_count`
     *  entries of `input_ports`, `output_port_count` of `output_ports`
     *  (NULL when the count is 0). The fields above stay as they were and
     *  describe port 0, so a 1.0/1.1 plugin (one port each way at most)
     *  never needs these. Entry 0 shares port 0's buffers.
     *  THE RULE for the output state: the host presets every output's
     *  `valid_frames`/`ended` (to what the inputs say, as for port 0) and,
     *  after process, reads output k's state from `output_ports[k]`; for
     *  port 0 it takes `output_ports[0]` when the plugin changed it from the
     *  preset, else `output_valid_frames`/`output_ended` (so a plugin may
     *  write port 0's state either way). With several inputs the preset is
     *  the longest valid span, ended when every input has ended. */
    uint32_t input_port_count;
    uint32_t output_port_count;
    const agraph_input_port_buffers_t *input_ports;
    agraph_output_port_buffers_t *output_ports;
} agraph_process_t;

/** Execution domain of a node type. Append-only. */
typedef enum agraph_domain {
    /** `process` runs on the audio thread and is realtime-safe. */
    AGRAPH_DOMAIN_REALTIME = 0,
    /** The node's work runs on the worker thread through an extension
     *  (e.g. AGRAPH_EXT_DECODER); `process` may be NULL. A host that does
     *  not know any of the type's extensions reports the type as
     *  unavailable. */
    AGRAPH_DOMAIN_WORKER = 1
} agraph_domain_t;

/** Flags of a node type (bit set). Append-only. */
enum {
    /** A source that never ends (the host renders it until stopped). */
    AGRAPH_NODE_ENDLESS = 1u << 0,
    /** (1.4; read only from plugins whose abi.minor >= 4, ignored from
     *  older ones) The node virtualizes: it renders speaker signals for
     *  headphones (a binaural renderer, a crossfeed). The host refuses,
     *  when it validates a graph, any link carrying audio tagged
     *  "binaural" into any of its inputs, with the same message as for its
     *  built-in virtualizers, so nothing is rendered for headphones twice.
     *  Such a node usually names its output "binaural" (`output_layout`),
     *  so that no virtualizer downstream takes it again; `agraph
     *  check-plugin` notes one that does not. */
    AGRAPH_NODE_VIRTUALIZES = 1u << 1
};

/** The static description of one node type, and its instance functions.
 *  Owned by the plugin, immutable. */
typedef struct agraph_node_type {
    /** Unique type id used in graph files: reverse-DNS ("com.example.tremolo")
     *  or a short unique name; letters, digits, '.', '-', '_'. A type id that
     *  is already known (built in, or from an earlier plugin) is refused. */
    const char *type_id;
    /** One sentence for `agraph nodes`. Never NULL. */
    const char *summary;
    /** An agraph_domain_t value. */
    uint32_t domain;
    /** AGRAPH_NODE_* flags. */
    uint32_t flags;

    /** Input ports: 0 (a source) or 1; since ABI 1.2 up to
     *  AGRAPH_MAX_PORTS (a host before 1.2 refuses more than 1). */
    uint32_t input_count;
    /** Output ports: 0 (a sink) or 1; since ABI 1.2 up to AGRAPH_MAX_PORTS. */
    uint32_t output_count;
    const agraph_port_t *inputs;
    const agraph_port_t *outputs;

    /** The parameters, in order: the index of a parameter in this array is
     *  the index passed to set_parameter. */
    uint32_t param_count;
    uint32_t reserved0;
    const agraph_param_t *params;

    /** For the plugin's own use (e.g. the Swift kit keeps the Swift type
     *  here). The host never reads it. */
    void *plugin_data;

    /** Optional (may be NULL): checks a parameter combination, input
     *  channel count or (1.4) input layout tag beyond what the static
     *  description says (a renderer refusing "discrete" input whose
     *  channel positions it cannot know). Returns 1
     *  when fine; 0 after writing a one-line reason (NUL-terminated, at most
     *  `error_capacity` bytes) into `error`, which the host reports as a
     *  validation error of the node. Must not keep `info` or its pointers.
     *  [main-thread] */
    int32_t (*check)(const agraph_create_info_t *info, char *error, uint32_t error_capacity);

    /** Creates an instance for a validated node. Returns NULL on failure
     *  after writing a reason into `error` (as for `check`). The new
     *  instance is !active. May allocate. Must not keep `info`; copy what
     *  it needs (strings included, the 1.4 input layout tags too).
     *  [main-thread] */
    agraph_instance_t *(*create)(const agraph_create_info_t *info, char *error, uint32_t error_capacity);

    /** Prepares for processing: allocate every buffer here (the last place
     *  the instance may allocate before deactivate). `max_frames` is the
     *  largest `frames` process will get. Returns 1 on success; 0 after
     *  writing a reason into `error`.
     *  [main-thread & !active] → active */
    int32_t (*activate)(agraph_instance_t *instance, double sample_rate, uint32_t max_frames,
                        char *error, uint32_t error_capacity);

    /** Processes one block: reads `block->inputs`, writes every output
     *  channel for `block->frames` frames, may set the output state fields.
     *  Must not allocate, lock, wait or do I/O. May be NULL only for
     *  AGRAPH_DOMAIN_WORKER types.
     *  [audio-thread & active] */
    void (*process)(agraph_instance_t *instance, agraph_process_t *block);

    /** Changes a LIVE parameter; takes effect from the next process call
     *  (smooth it if a jump would click). `index` is into `params`; `value`
     *  is already range-checked (booleans 0/1, choices their index). Called
     *  between process calls, never during one. May be NULL when no
     *  parameter is LIVE.
     *  [audio-thread & active] for AGRAPH_DOMAIN_REALTIME types;
     *  [worker-thread & active] for AGRAPH_DOMAIN_WORKER types (decoders:
     *  between two decode calls, applying from the next frame decoded). */
    void (*set_parameter)(agraph_instance_t *instance, uint32_t index, double value);

    /** Frames by which the output lags the input (lookahead, FFT blocks,
     *  decoder delay), for latency reporting. May be NULL (0).
     *  [main-thread & active] */
    uint32_t (*latency)(const agraph_instance_t *instance);

    /** Ends processing; the instance may free what activate allocated and
     *  may be activated again.
     *  [main-thread & active] → !active */
    void (*deactivate)(agraph_instance_t *instance);

    /** Frees the instance. The host deactivates first when it was active.
     *  [main-thread & !active] */
    void (*destroy)(agraph_instance_t *instance);

    /** Optional (may be NULL): an extension of this instance by id (see
     *  AGRAPH_EXT_*), or NULL when the instance does not implement it. The
     *  returned struct belongs to the plugin and stays valid until destroy.
     *  [main-thread] */
    const void *(*get_extension)(const agraph_instance_t *instance, const char *id);

    /* ---- ABI 1.1: read only from plugins whose abi.minor >= 1 ---- */

    /** For an AGRAPH_DOMAIN_WORKER decoder: the codec of the compressed
     *  frames its input takes, e.g. "ac4-sync" (AC-4 sync frames, "simple
     *  transport") or "ac4-raw" (raw frames as MP4 carries them); the host
     *  links it only to sources of that codec. NULL for an audio input.
     *  (1.3) Several codecs, separated by single spaces ("aac ac3 eac3"):
     *  hosts before 1.3 read the list as one name and link nothing to it,
     *  so a plugin that lists several declares abi.minor >= 3. The codec
     *  names of the `media` source are FFmpeg's codec names (`aac`, `ac3`,
     *  `eac3`, `mp3`, `opus`, `vorbis`, `flac`, `alac`, `dts`, `pcm_s16le`…),
     *  and "ac4-raw" for AC-4.
     *  [read on the main thread] */
    const char *input_codec;

    /** Optional (may be NULL): the layout tag of the output for these
     *  parameters: "mono", "stereo", "binaural", "5.1", "7.1" or
     *  "discrete"; NULL (function or result) means the usual layout for the
     *  channel count. The returned string is static. Must not keep `info`.
     *  [main-thread] */
    const char *(*output_layout)(const agraph_create_info_t *info);

    /* ---- ABI 1.2: read only from plugins whose abi.minor >= 2 ---- */

    /** Optional (may be NULL): the layout tag of output port `port` (0 …
     *  output_count-1) for these parameters, as `output_layout` for port 0
     *  (which it replaces when both are given). NULL (function or result):
     *  the usual layout for the port's channel count (for a SAME_AS_INPUT
     *  port: input 0's layout). The returned string is static. Must not
     *  keep `info`.
     *  [main-thread] */
    const char *(*output_port_layout)(const agraph_create_info_t *info, uint32_t port);

    /* Fields appended in later minor versions go here. */
} agraph_node_type_t;

/* ======================================================================
 * The plugin
 * ====================================================================== */

/** The ABI version a plugin was built against. */
typedef struct agraph_abi_version {
    uint32_t major;
    uint32_t minor;
} agraph_abi_version_t;

/** What `agraph_plugin_entry` returns. Owned by the plugin, immutable,
 *  valid until the library is unloaded. */
typedef struct agraph_plugin {
    /** MUST be the first field, in every major version:
     *  { AGRAPH_PLUGIN_ABI_MAJOR, AGRAPH_PLUGIN_ABI_MINOR }. The host reads
     *  only this field of a plugin whose major differs from its own. */
    agraph_abi_version_t abi;
    /** Human-readable name, vendor and version of the plugin (not of the
     *  ABI), for `agraph nodes`. Never NULL. */
    const char *name;
    const char *vendor;
    const char *version;
    /** The node types, each pointer valid until unload. */
    uint32_t node_type_count;
    uint32_t reserved0;
    const agraph_node_type_t *const *node_types;

    /** Optional (may be NULL): plugin-wide extension by id, or NULL.
     *  [main-thread] */
    const void *(*get_extension)(const char *id);

    /* ---- ABI 1.2: read only from plugins whose abi.minor >= 2 ---- */

    /** Optional (may be NULL): library-wide set-up, for what all instances
     *  share (an external library opened once, tables computed once).
     *  Called once per process, right after the host checked `abi`, before
     *  any other function or field of the plugin is used (node types,
     *  `get_extension`). `plugin_path` is the library's absolute path
     *  (valid during the call). Returns 1 when fine; 0 after writing a
     *  reason into `error` (NUL-terminated, at most `error_capacity`
     *  bytes): the host then refuses the library with the reason and calls
     *  nothing else of it (not deinit either). Keep it quick: every command
     *  that loads plugins (`agraph nodes` too) calls it; defer slow work to
     *  first use.
     *  [main-thread] */
    int32_t (*init)(const char *plugin_path, char *error, uint32_t error_capacity);

    /** Optional (may be NULL): undoes init, after every instance was
     *  destroyed, only after a successful init. agraph calls it only when it
     *  is done with the library for good, which `agraph run`, `render`,
     *  `validate`, `nodes` and the other graph commands never are: they
     *  end with the process and never call deinit (do not rely on it to
     *  save anything). `agraph check-plugin` calls it once at the end, to
     *  check it.
     *  [main-thread] */
    void (*deinit)(void);

    /* Fields appended in later minor versions go here. */
} agraph_plugin_t;

/** The one function a plugin exports. Called by the host once after
 *  dlopen, before anything else; must not allocate anything the host would
 *  have to free; may return the same pointer on every call. Returns NULL
 *  when the plugin cannot work on this system (the host reports it).
 *  [main-thread] */
typedef const agraph_plugin_t *(*agraph_plugin_entry_fn)(void);
const agraph_plugin_t *agraph_plugin_entry(void);

/* ======================================================================
 * Extension: decoder (AGRAPH_EXT_DECODER), per instance
 * ====================================================================== */

/*
 * A decoder node consumes compressed frames (e.g. a Dolby AC-4 / DAA
 * elementary stream) and produces PCM. Decoding is too bursty and too slow
 * per call for the audio thread, so it runs on the host's worker thread:
 *
 *   worker thread:  demux/read frame ─▶ decode(frame, timestamp) ─▶ PCM ─▶ ring
 *   audio thread:   ring ─▶ node output   (host code; the plugin's process is
 *                                          not called, it may be NULL)
 *
 * Such a node type declares `domain = AGRAPH_DOMAIN_WORKER`, and its
 * instances return this struct from `get_extension(instance,
 * AGRAPH_EXT_DECODER)`. The host owns the reading of the compressed stream
 * (which source feeds the decoder is a host parameter of the graph node),
 * the ring between the worker and the audio thread, seeking, underrun
 * counting and latency reporting; the plugin only turns frames into PCM.
 *
 * Lifecycle: create → activate(sample_rate, max_frames) → configure? →
 * { decode | flush | set_parameter }* on the worker thread → decode(NULL, 0)
 * at the end of the stream → deactivate → destroy. The host never calls
 * these concurrently with each other, or with activate/deactivate/destroy.
 *
 * For a WORKER-domain node, `set_parameter` (LIVE parameters) is called on
 * the worker thread between two decode calls, not on the audio thread; the
 * change applies from the next frame decoded.
 *
 * Timing contract: after activate and after each flush, the first PCM frame
 * a decoder writes is sample 0 of the first compressed frame fed after it.
 * A decoder whose library delays its output (priming, overlap) drops that
 * delay itself, measured from what the library reports where it can, and
 * gives the held-back tail at the end when called with frame = NULL, size
 * = 0 ("drain"). The host seeks by flushing, feeding from the independent
 * frame at or before the target, and discarding PCM up to the exact
 * target sample.
 *
 * The input port of a decoder type is declared as for audio (input_count =
 * 1) and names its codec in `input_codec` (ABI 1.1). Hosted since ABI 1.1
 * (the `ac4` source feeds it; the `daa` plugin is one); agraph 1.0 hosts
 * do not know the extension and report WORKER-domain types as unavailable.
 * agraph does not call `configure` yet (its sources carry no out-of-band
 * configuration).
 */
#define AGRAPH_EXT_DECODER "agraph.decoder/1"

/** Result codes of the decoder functions. Append-only. */
typedef enum agraph_decode_status {
    /** PCM written (possibly 0 frames while the decoder primes). */
    AGRAPH_DECODE_OK = 0,
    /** The frame is corrupt; the host counts it, writes silence for its
     *  duration and continues with the next frame. */
    AGRAPH_DECODE_BAD_FRAME = 1,
    /** The stream changed in a way the node cannot follow (channel count
     *  beyond `output_channels`); the host stops the node with an error. */
    AGRAPH_DECODE_FATAL = 2
} agraph_decode_status_t;

typedef struct agraph_decoder_ext {
    /** Optional (may be NULL): passes codec configuration found by the
     *  host's demuxer (e.g. a decoder-specific info box), before the first
     *  decode and after a stream change. `bytes` is valid only during the
     *  call. Returns 1 on success; 0 after writing a reason into `error`.
     *  [worker-thread & active] */
    int32_t (*configure)(agraph_instance_t *instance, const uint8_t *bytes, uint32_t size,
                         char *error, uint32_t error_capacity);

    /** Largest number of PCM frames one decode call may produce; the host
     *  sizes `pcm` by it. [main-thread & active] */
    uint32_t (*max_frames_per_decode)(const agraph_instance_t *instance);

    /** Decodes one compressed frame. `frame`/`size`: the frame's bytes,
     *  owned by the host, valid only during the call; frame = NULL and
     *  size = 0 at the end of the stream: write what is still held back
     *  (may take several calls; 0 frames written means done). `timestamp`: the
     *  frame's presentation time in samples at the graph's rate (from the
     *  container; -1 when unknown), so the decoder can report or fill gaps.
     *  `pcm`: `output_channels` host buffers of `capacity_frames` frames
     *  (≥ max_frames_per_decode); the plugin writes `*frames_written`
     *  frames to every channel. May allocate (it is not the audio thread)
     *  but should not: it runs once per frame.
     *  [worker-thread & active] */
    int32_t (*decode)(agraph_instance_t *instance, const uint8_t *frame, uint32_t size,
                      int64_t timestamp, float *const *pcm, uint32_t capacity_frames,
                      uint32_t *frames_written);

    /** Drops all decoder state (overlap buffers, priming) before the host
     *  feeds frames from another position (seek, loop, stream switch).
     *  The first decodes afterwards may produce 0 frames while priming.
     *  [worker-thread & active] */
    void (*flush)(agraph_instance_t *instance);

    /** The decoder's delay in frames: how far its PCM lags the frames'
     *  timestamps (priming, overlap-add). The host adds it to the node's
     *  latency and may trim it after a flush. [main-thread & active] */
    uint32_t (*decoder_latency)(const agraph_instance_t *instance);

    /** Optional (may be NULL): why the last decode returned
     *  AGRAPH_DECODE_BAD_FRAME or AGRAPH_DECODE_FATAL, in words for the
     *  user ("DAA error 1005: frame not valid …"); "" otherwise. Owned by
     *  the plugin, valid until the next call on the instance.
     *  [worker-thread & active, between decode calls] */
    const char *(*last_error)(const agraph_instance_t *instance);
} agraph_decoder_ext_t;

/* ======================================================================
 * Extension: decoder of a container's stream (AGRAPH_EXT_DECODER_STREAM),
 * per instance, ABI 1.3
 * ====================================================================== */

/*
 * A decoder fed by a demuxer (the `media` source: MP4, Matroska, Ogg,
 * MPEG-TS, raw AC-3, ADTS, MP3, …) needs what the container says about the
 * stream beside the frames: its codec parameters and codec-specific
 * configuration (`open_stream`), and which decoded samples are not part of
 * the presentation (`trim_next_frame`: encoder delay such as AAC priming in
 * an MP4 edit list, Opus pre-skip, the LAME header's delay; padding at the
 * end of the last frame). A decoder instance offers this extension in
 * addition to AGRAPH_EXT_DECODER; the host calls it only for sources that
 * have such information.
 *
 * With this extension, the `timestamp` given to `decode` may be negative
 * (frames whose output is priming, before the presentation's sample 0),
 * and INT64_MIN means unknown. Timestamps stay in samples at the graph's
 * rate.
 */
#define AGRAPH_EXT_DECODER_STREAM "agraph.decoder-stream/1"

/** What a demuxer knows about one stream. Valid only during `open_stream`. */
typedef struct agraph_stream_info {
    /** The codec, as named in `input_codec` ("aac", "eac3", …). */
    const char *codec;
    /** The coded sample rate in Hz (it may differ from the graph's: the
     *  decoder then converts, or refuses in `open_stream`). */
    uint32_t sample_rate;
    /** Coded channels, and their positions as a WAVE channel mask (bit 0
     *  front left, 1 front right, 2 front centre, 3 LFE, 4 back left, 5 back
     *  right, 9 side left, 10 side right, …); 0 when the container gives no
     *  positions. */
    uint32_t channels;
    uint64_t channel_mask;
    /** The container's format tag or fourcc (e.g. a WAVE format tag for
     *  PCM, 'mp4a'); 0 when none. */
    uint32_t codec_tag;
    /** Bits per coded sample (PCM, ADPCM), bits of the decoded samples
     *  (lossless), bytes per packet for block codecs, samples per frame
     *  when constant: each 0 when unknown. */
    uint32_t bits_per_coded_sample;
    uint32_t bits_per_raw_sample;
    uint32_t block_align;
    uint32_t frame_size;
    /** The codec's profile as the demuxer found it (e.g. AAC HE: FFmpeg's
     *  profile numbers), -1 when unknown. */
    int32_t profile;
    /** Mean bit rate in bits per second, 0 when unknown. */
    int64_t bit_rate;
    /** Codec-specific configuration as the container stores it (an AAC
     *  AudioSpecificConfig, OpusHead, a FLAC STREAMINFO block, the ALAC
     *  magic cookie, Vorbis headers in Xiph lacing…); NULL when none. */
    const uint8_t *extradata;
    uint32_t extradata_size;
    uint32_t reserved0;
} agraph_stream_info_t;

typedef struct agraph_decoder_stream_ext {
    /** The stream's parameters, before the first `decode` (and again after
     *  a flush that changes streams). Returns 1 on success; 0 after
     *  writing a reason into `error` (the host stops the node with it).
     *  [worker-thread & active] */
    int32_t (*open_stream)(agraph_instance_t *instance, const agraph_stream_info_t *stream,
                           char *error, uint32_t error_capacity);

    /** Drop samples of the output of the next frame given to `decode`:
     *  `skip_start` at its start and `discard_end` at its end, in samples
     *  at the stream's coded rate. Called just before that `decode`, only
     *  when one of them is not 0.
     *  [worker-thread & active] */
    void (*trim_next_frame)(agraph_instance_t *instance, uint32_t skip_start, uint32_t discard_end);

    /** Frames the decoder found damaged and concealed itself (decoded
     *  anyway: its own error concealment), since activate. The host adds
     *  them to the frames it counted for AGRAPH_DECODE_BAD_FRAME and shows
     *  the sum. [any-thread] */
    uint64_t (*concealed_frames)(const agraph_instance_t *instance);
} agraph_decoder_stream_ext_t;

/* ======================================================================
 * Extension: plugin info (AGRAPH_EXT_PLUGIN_INFO), plugin-wide
 * ====================================================================== */

/** From `agraph_plugin_t.get_extension(AGRAPH_EXT_PLUGIN_INFO)`: details
 *  that `agraph nodes <type>` and `agraph probe` show, e.g. which external
 *  library a plugin found and its version strings, or why it found none.
 *  Multi-line UTF-8 text owned by the plugin, valid until the next call.
 *  [main-thread] */
#define AGRAPH_EXT_PLUGIN_INFO "agraph.plugin-info/1"
typedef struct agraph_plugin_info_ext {
    const char *(*details)(void);
} agraph_plugin_info_ext_t;

/* ======================================================================
 * The host side (ABI 1.2): the host table and host extensions
 * ====================================================================== */

/*
 * Every `create` (and `check`, `output_layout`) gets a host table in
 * `agraph_create_info_t.host` when `host_abi_minor >= 2`. One table per
 * node: what the plugin tells it (a message, a latency change) is about
 * that node. The plugin looks host extensions up by id, ideally once in
 * create, and keeps the pointers: they stay valid as long as the table.
 * Host extension structs follow the extension rule above: frozen, a change
 * gets a new id. A host may lack any of them (get_extension returns NULL).
 *
 *   plugin ─ info->host->get_extension(info->host, AGRAPH_HOST_EXT_LOG) ─▶ agraph_host_log_t
 */

/** The host table. Owned by the host; see `agraph_create_info_t.host` for
 *  how long it is valid. */
typedef struct agraph_host {
    /** The host's ABI version. */
    agraph_abi_version_t abi;
    /** The host's own; the plugin never reads or writes it. */
    void *host_data;
    /** The host's name and version ("agraph", "0.1.0"), never NULL. */
    const char *name;
    const char *version;
    /** A host extension by id (AGRAPH_HOST_EXT_*), or NULL when the host
     *  does not offer it. Realtime-safe (no allocation or lock), though
     *  meant for create. The struct returned stays valid as long as
     *  the host table.
     *  [any-thread] */
    const void *(*get_extension)(const struct agraph_host *host, const char *id);
} agraph_host_t;

/* ---------------------------------------------------------------------- */

/** Messages from the plugin to the user, printed by the host prefixed with
 *  the node id and type ("node 'dec' (daa): warning: …"). */
#define AGRAPH_HOST_EXT_LOG "agraph.log/1"

/** Severity of a message. Append-only. */
typedef enum agraph_log_severity {
    AGRAPH_LOG_DEBUG = 0,
    AGRAPH_LOG_INFO = 1,
    AGRAPH_LOG_WARNING = 2,
    AGRAPH_LOG_ERROR = 3
} agraph_log_severity_t;

/** Longest message `log_rt` keeps, in bytes including the NUL (longer
 *  ones are cut). */
#define AGRAPH_LOG_RT_CAPACITY 240

typedef struct agraph_host_log {
    /** Reports a message (UTF-8, NUL-terminated, valid during the call).
     *  May allocate and lock: never from the audio thread.
     *  [main-thread | worker-thread] */
    void (*log)(const agraph_host_t *host, int32_t severity, const char *message);

    /** The audio thread's variant: copies the message into a preallocated,
     *  lock-free queue of this node and returns; no allocation, lock or
     *  I/O. The host drains the queue on the main thread and prints the
     *  messages later. A full queue drops the message and counts it (the
     *  count is printed). Call it only from within a call the host made on
     *  this node (the queue has one writer).
     *  [audio-thread, or any thread inside a call on this instance] */
    void (*log_rt)(const agraph_host_t *host, int32_t severity, const char *message);
} agraph_host_log_t;

/* ---------------------------------------------------------------------- */

/** What the node's output reaches in the end: headphones, speakers, or
 *  unknown (offline, or connections that say nothing). A live host works
 *  it out (from the JACK ports the graph's outputs are connected to) and
 *  knows it before activation; it may change while the graph runs.
 *  Two sides under one id:
 *  - host side, `info->host->get_extension(host, AGRAPH_HOST_EXT_OUTPUT_ROUTE)`
 *    → agraph_host_output_route_t: the route now;
 *  - plugin side, `type->get_extension(instance, AGRAPH_EXT_OUTPUT_ROUTE)`
 *    → agraph_output_route_ext_t: told when it changes. */
#define AGRAPH_HOST_EXT_OUTPUT_ROUTE "agraph.output-route/1"
#define AGRAPH_EXT_OUTPUT_ROUTE "agraph.output-route/1"

/** A route. Append-only (treat unknown values as UNKNOWN). */
typedef enum agraph_output_route {
    AGRAPH_ROUTE_UNKNOWN = 0,
    AGRAPH_ROUTE_HEADPHONES = 1,
    AGRAPH_ROUTE_SPEAKERS = 2
} agraph_output_route_t;

typedef struct agraph_host_output_route {
    /** The route now (an agraph_output_route_t). Already known when
     *  `activate` runs. An atomic read: realtime-safe.
     *  [any-thread] */
    uint32_t (*get)(const agraph_host_t *host);
} agraph_host_output_route_t;

typedef struct agraph_output_route_ext {
    /** The route changed (also called once before activate when the host
     *  knows it then). May run while the instance processes or decodes on
     *  another thread: store the value atomically and apply it from the
     *  next process/decode call.
     *  [main-thread] */
    void (*changed)(agraph_instance_t *instance, uint32_t route);
} agraph_output_route_ext_t;

/* ---------------------------------------------------------------------- */

/** The plugin says that its `latency` (or a decoder's `decoder_latency`)
 *  changed; the host asks again, recomputes the graph's latencies and
 *  reports them (to JACK, when live). */
#define AGRAPH_HOST_EXT_LATENCY "agraph.latency/1"

typedef struct agraph_host_latency {
    /** The instance's latency changed (it may be read right away). Calls
     *  from another thread are ignored (and counted, for `agraph
     *  check-plugin`).
     *  [main-thread & active] */
    void (*changed)(const agraph_host_t *host);
} agraph_host_latency_t;

/* ---------------------------------------------------------------------- */

/** Which thread is this, in the words of the thread tags above. The host
 *  calls each function on the thread its tag says; a plugin may check it
 *  (in debug builds, say). Each function returns 1 or 0, realtime-safe.
 *  A thread the host did not start or mark counts as the main thread. */
#define AGRAPH_HOST_EXT_THREAD_CHECK "agraph.thread-check/1"

typedef struct agraph_host_thread_check {
    /** [any-thread] */
    int32_t (*is_main_thread)(const agraph_host_t *host);
    /** The realtime thread (JACK's process thread, the offline render loop).
     *  [any-thread] */
    int32_t (*is_audio_thread)(const agraph_host_t *host);
    /** The host's worker (file reading, decoding). [any-thread] */
    int32_t (*is_worker_thread)(const agraph_host_t *host);
} agraph_host_thread_check_t;

#ifdef __cplusplus
}
#endif

#endif /* AGRAPH_PLUGIN_H */
