// The host layer's vocabulary: a module that imports AudioGraphHost sees
// the engine (AudioGraphCore), the node API and graph files (GraphFile,
// which re-exports AudioGraphNodeAPI).
@_exported import AudioGraphCore
@_exported import GraphFile
