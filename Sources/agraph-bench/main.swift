// agraph-bench: benchmarks, run in a release build.
//
//   swift build -c release --product agraph-bench && swift build -c release --product agraph
//   .build/release/agraph-bench offline
//
// See docs/performance.md for the figures and what they measure.
import AudioGraphCore
#if canImport(Glibc)
import Glibc
#endif

processEntryNanos.store(MonotonicClock.nanoseconds(), ordering: .relaxed)
AgraphBench.main()
