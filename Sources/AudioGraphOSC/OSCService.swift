// What the OSC server does with a message: the address space mapped onto a
// `ControlSurface`, the replies, the acknowledgements of `/agraph/set`, and
// the subscriptions (meters, position, events). Everything here runs on the
// server's one thread ([control-thread]): no locks of its own; the control
// surface it calls is made for control threads.
//
// Adding a command: a case in `Command`, a line in `handle(_:from:now:)`;
// the help text lists `Command.allCases`.
//
// A hot reload replaces the graph's control surface: the service asks for
// the current one before each message and each tick (`follow`).
//
// Events come from the graph's one monitor (`ControlSurface.monitor`, a
// live graph's `RunningGraph.monitor`): the service subscribes with a
// cursor of its own and polls it at `Limits.eventPoll`; it diffs nothing.
// Parameter addresses are resolved once into handles, kept by address.

import AudioGraphHost
#if canImport(Glibc)
import Glibc
#endif

/// A request refused, in words for the sender (sent as `/agraph/error`).
struct Refusal: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// The OSC address space of a running graph. [control-thread]
final class OSCService {
    static let prefix = "/agraph/"

    /// The one-word addresses, `/agraph/<command>`.
    enum Command: String, CaseIterable {
        case set, get, seek, pause, play, status, subscribe, unsubscribe, reload
    }

    /// What `/agraph/subscribe` takes.
    enum Kind: String, CaseIterable {
        case meters, position, events
    }

    /// Limits, each documented in docs/osc.md.
    enum Limits {
        /// Subscriber addresses at once.
        static let subscribers = 32
        /// Failed sends after which a subscriber is dropped, unless
        /// `sendSuccesses` sends in a row succeeded since the last failure.
        /// (Linux reports an ICMP "port unreachable" on the send after the
        /// one that caused it, and does not send that one: to a closed port,
        /// every other send fails.)
        static let sendFailures = 3
        static let sendSuccesses = 10
        /// Rates of periodic subscriptions, Hz.
        static let rates: ClosedRange<Double> = 0.1...100
        static let defaultRate = 10.0
        /// How often the event sources are looked at while someone
        /// subscribes to events, s.
        static let eventPoll = 0.02
        /// How often pending acknowledgements are checked, s.
        static let ackPoll = 0.0002
        /// The longest the thread sleeps with nothing to do, s (it is
        /// woken at once to stop).
        static let idle = 0.25
        /// Characters of an error message sent back.
        static let errorText = 1000
        /// Parameter handles kept (the cache starts again when full).
        static let handles = 1024
    }

    /// The running graph's control surface, as last looked at.
    private(set) var control: ControlSurface
    private let source: () -> ControlSurface
    private let reloader: OSCServer.ReloadHandler?
    private let socket: UDPSocket
    private var engine: Engine { control.compiled.engine }

    /// `/agraph/set` acknowledgements waiting for the audio thread to
    /// take their change: sent once the parameter queue's read position
    /// reaches `ticket`. In ticket order.
    private var acks: [(ticket: Int, to: SocketAddress, message: OSCMessage)] = []

    private var subscribers: [Subscriber] = []
    /// The monitor the events subscription reads, and its place in it;
    /// nil while no one subscribes to events.
    private var eventFeed: (monitor: GraphMonitor, cursor: GraphEventCursor)?
    private var nextEventPoll = 0.0
    /// Parameter handles by the text they were resolved from (an OSC
    /// address or `/agraph/set`'s argument), for the current control
    /// surface; at most `Limits.handles`.
    private var handles: [String: ParameterHandle] = [:]

    /// Where refusals are kept for the host's console (nil: nowhere).
    private let errorLog: OSCErrorLog?

    init(control: @escaping () -> ControlSurface, reload: OSCServer.ReloadHandler? = nil, socket: UDPSocket,
         errorLog: OSCErrorLog? = nil) {
        source = control
        self.control = control()
        reloader = reload
        self.socket = socket
        self.errorLog = errorLog
    }

    convenience init(control: ControlSurface, socket: UDPSocket) {
        self.init(control: { control }, socket: socket)
    }

    /// Takes the current control surface when a reload replaced it. The
    /// acknowledgements still waiting were posted to the engine a reload
    /// swapped out, which takes no more changes: they are sent now. The
    /// events subscription watches the new graph's nodes from here on.
    private func follow() {
        let current = source()
        guard current !== control else { return }
        let sameEngine = current.compiled.engine === control.compiled.engine
        control = current
        handles.removeAll()
        if !sameEngine {
            for a in acks { send(a.message, to: a.to) }
            acks.removeAll()
        }
        // A live graph's monitor follows the reload itself; a surface
        // without one has a monitor of its own: subscribe to the new one.
        if let feed = eventFeed, feed.monitor !== current.monitor {
            let monitor = current.monitor
            eventFeed = (monitor, monitor.subscribe())
        }
    }

    /// The handle for `key`, resolved once by `resolve` and kept.
    private func handle(_ key: String, _ resolve: () throws(ControlError) -> ParameterHandle) throws(Refusal) -> ParameterHandle {
        if let h = handles[key] { return h }
        let h: ParameterHandle
        do { h = try resolve() } catch { throw Refusal(error.message) }
        if handles.count >= Limits.handles { handles.removeAll() }
        handles[key] = h
        return h
    }

    // MARK: receiving

    /// One datagram of `size` bytes (more than `bytes` holds: it was cut).
    func receive(_ bytes: UnsafeRawBufferPointer, size: Int, from sender: SocketAddress, now: Double) {
        follow()
        guard size <= bytes.count else {
            refuse("", "a datagram of \(size) bytes: the limit is \(bytes.count)", to: sender)
            return
        }
        let messages: [OSCMessage]
        do { messages = try OSCPacket.decode(UnsafeRawBufferPointer(rebasing: bytes[0..<size])) } catch {
            refuse(Self.address(of: UnsafeRawBufferPointer(rebasing: bytes[0..<size])), error.message, to: sender)
            return
        }
        for m in messages { handle(m, from: sender, now: now) }
    }

    /// The address at the start of an undecodable datagram, when it has
    /// a printable one: `/agraph/error` names it.
    static func address(of bytes: UnsafeRawBufferPointer) -> String {
        guard bytes.first == UInt8(ascii: "/"), let end = bytes.firstIndex(of: 0), end <= 256 else { return "" }
        let head = bytes[0..<end]
        guard head.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return "" }
        return String(decoding: head, as: UTF8.self)
    }

    /// One message. Nothing happens unless it is valid in every part.
    func handle(_ m: OSCMessage, from sender: SocketAddress, now: Double) {
        do throws(Refusal) {
            // Bytes, not characters: a combining mark after a '/' must not
            // hide the '/' (Swift compares and splits by character).
            guard m.address.utf8.starts(with: Self.prefix.utf8) else {
                throw Refusal("unknown address \(m.address): AudioGraph's addresses start with /agraph/")
            }
            let parts = m.address.utf8.dropFirst(Self.prefix.utf8.count)
                .split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
                .map { String(decoding: $0, as: UTF8.self) }
            if parts.count == 1 {
                guard let command = Command(rawValue: parts[0]) else {
                    throw Refusal("unknown address \(m.address); addresses: "
                                  + Command.allCases.map { Self.prefix + $0.rawValue }.joined(separator: ", ")
                                  + ", /agraph/NODE/PARAM, /agraph/NODE/PARAM/INDEX")
                }
                switch command {
                case .set: try set(m, from: sender)
                case .get: try get(m, from: sender)
                case .seek: try seek(m, from: sender)
                case .pause: if try button(m) { control.pause() }; ok(m, to: sender)
                case .play: if try button(m) { control.play() }; ok(m, to: sender)
                case .status: if try button(m) { try status(m, to: sender) }
                case .subscribe: try subscribe(m, from: sender, now: now)
                case .unsubscribe: try unsubscribe(m, from: sender)
                case .reload: try reload(m, from: sender)
                }
                return
            }
            // /agraph/NODE/PARAM or /agraph/NODE/PARAM/INDEX: set, no reply.
            let target: ParameterHandle
            if let h = handles[m.address] {
                target = h
            } else {
                let address = try Self.parameterAddress(m.address, parts)
                target = try handle(m.address) { () throws(ControlError) in try control.resolve(address) }
            }
            guard m.arguments.count == 1 else {
                throw Refusal("\(m.address) takes one value (a number, true/false or a word); got \(m.arguments.count) arguments (\(m.typeTags))")
            }
            _ = try apply(target, m.arguments[0])
        } catch {
            refuse(m.address, error.message, to: sender)
        }
    }

    /// `node.param` or `node.param[i]` of `/agraph/node/param[/i]`, taken
    /// from the path's parts (no text to parse again).
    static func parameterAddress(_ full: String, _ parts: [String]) throws(Refusal) -> ParameterAddress {
        guard parts.count == 2 || parts.count == 3, !parts.contains(where: \.isEmpty) else {
            throw Refusal("\(full) is not an address of a parameter: write /agraph/NODE/PARAM or /agraph/NODE/PARAM/INDEX")
        }
        if parts.contains(where: { $0.contains(where: { "*?[]{}, #".contains($0) }) }) {
            throw Refusal("\(full): OSC address patterns (* ? [ ] { }) are not supported; name one node and parameter")
        }
        guard parts.count == 3 else { return ParameterAddress(node: parts[0], parameter: parts[1]) }
        guard parts[2].allSatisfy({ $0 >= "0" && $0 <= "9" }), let i = Int(parts[2]) else {
            throw Refusal("\(full): the index '\(parts[2])' must be a whole number ≥ 0 (element i of a list parameter)")
        }
        return ParameterAddress(node: parts[0], parameter: parts[1], element: i)
    }

    /// Sets `address` to one OSC argument: a number (`i h f d`), `T`/`F`,
    /// or a word (`s S`: a number, true/false/on/off, a choice's name).
    private func apply(_ address: ParameterHandle, _ argument: OSCArgument) throws(Refusal) -> ParameterReading {
        do {
            switch argument {
            case .bool(let b):
                return try control.set(address, b ? 1 : 0)
            case .string(let word), .symbol(let word):
                if let v = ControlLine.number(word), !v.isFinite { throw Refusal("\(address): '\(word)' is not a finite number") }
                return try control.set(address, word: word)
            default:
                guard let v = argument.number else {
                    throw Refusal("\(address) takes a number (i h f d), true/false (T F) or a word (s S); got type '\(argument.typeTag)'")
                }
                guard v.isFinite else { throw Refusal("\(address): \(v) is not a finite number") }
                return try control.set(address, v)
            }
        } catch let e as ControlError {
            throw Refusal(e.message)
        } catch let e as Refusal {
            throw e
        } catch {
            throw Refusal("\(error)")
        }
    }

    // MARK: commands

    /// `/agraph/set <node.param> <value>`: `/agraph/ack <node.param> <value> <word>`
    /// once the audio thread has taken the change.
    private func set(_ m: OSCMessage, from sender: SocketAddress) throws(Refusal) {
        guard m.arguments.count == 2, let address = m.arguments[0].text else {
            throw Refusal("/agraph/set takes a parameter address and a value: ,s then one of i h f d T F s (got \(m.typeTags))")
        }
        let reading = try apply(try handle("set " + address) { () throws(ControlError) in try control.resolve(address) },
                                m.arguments[1])
        // The change is in the queue: at most this many changes were posted
        // up to and including it (another control thread may have posted
        // after it; waiting for theirs too only errs late).
        let ticket = engine.parameters.postedCount
        acks.append((ticket, sender, OSCMessage("/agraph/ack", [.string(reading.address.description),
                                                                 .float(Float(reading.value)), .string(reading.word)])))
        sendAcks()
    }

    /// `/agraph/get <node.param>` → `/agraph/value <node.param> <value> <word>`.
    private func get(_ m: OSCMessage, from sender: SocketAddress) throws(Refusal) {
        guard m.arguments.count == 1, let address = m.arguments[0].text else {
            throw Refusal("/agraph/get takes one parameter address (,s: node.param or node.param[i]); got \(m.typeTags)")
        }
        let r: ParameterReading
        do { r = try control.get(address) } catch { throw Refusal(error.message) }
        send(OSCMessage("/agraph/value", [.string(r.address.description), .float(Float(r.value)), .string(r.word)]), to: sender)
    }

    /// `/agraph/seek <seconds> [node]`.
    private func seek(_ m: OSCMessage, from sender: SocketAddress) throws(Refusal) {
        guard (1...2).contains(m.arguments.count), let seconds = m.arguments[0].number,
              m.arguments.count == 1 || m.arguments[1].text != nil else {
            throw Refusal("/agraph/seek takes seconds and optionally a node: one of i h f d, then s (got \(m.typeTags))")
        }
        guard seconds.isFinite, seconds >= 0 else { throw Refusal("/agraph/seek: \(seconds) s is not a position (≥ 0)") }
        let node = m.arguments.count == 2 ? m.arguments[1].text : nil
        do { try control.seek(node: node, seconds: seconds) } catch { throw Refusal(error.message) }
        ok(m, to: sender)
    }

    /// `/agraph/reload`: reloads the graph file that runs (as `reload` at
    /// the prompt without a file); `/agraph/ok /agraph/reload <what
    /// changed>`, or `/agraph/error` with the file's diagnostics. It takes
    /// no path: OSC has no authentication, and a graph names files it
    /// reads and writes.
    private func reload(_ m: OSCMessage, from sender: SocketAddress) throws(Refusal) {
        guard let reloader else { throw Refusal("/agraph/reload: this server was started without hot reload") }
        guard try button(m) else { return }
        let report: String
        do { report = try reloader() } catch { throw Refusal("\(error)") }
        follow()
        ok(m, [.string(report)], to: sender)
    }

    /// Whether a button-like message asks for its action: no argument, or
    /// one `T`/number other than 0 (a control surface's button sends 1 on
    /// press and 0 on release; the release does nothing).
    private func button(_ m: OSCMessage) throws(Refusal) -> Bool {
        switch m.arguments.count {
        case 0: return true
        case 1:
            if case .bool(let b) = m.arguments[0] { return b }
            if let v = m.arguments[0].number { return v != 0 }
            fallthrough
        default:
            throw Refusal("\(m.address) takes no argument (or one T/F or number, as a button sends: 0 does nothing); got \(m.typeTags)")
        }
    }

    /// `/agraph/status` → a bundle: `/agraph/status`, then `/agraph/peak`
    /// per output port and `/agraph/meter` per meter channel.
    private func status(_ m: OSCMessage, to sender: SocketAddress) throws(Refusal) {
        let s: GraphStatus
        do { s = try control.status() } catch { throw Refusal(error.message) }
        send(bundle: [Self.statusMessage(s)] + Self.levelMessages(s), to: sender)
    }

    static func state(_ s: GraphStatus) -> String {
        s.serverGone ? "stopped" : s.finished ? "ended" : s.paused ? "paused" : "playing"
    }

    static func statusMessage(_ s: GraphStatus) -> OSCMessage {
        OSCMessage("/agraph/status", [
            .float(Float(s.seconds)), .int64(Int64(s.frames)), .string(state(s)),
            .int32(Int32(clamping: s.xruns)), .int32(Int32(clamping: s.underruns)), .int32(Int32(clamping: s.damagedFrames)),
            .float(Float(s.cpuLoad)), .int32(Int32(clamping: s.bufferSize)),
        ])
    }

    /// `/agraph/peak <port> <dBFS>` per output port, `/agraph/meter <node>
    /// <channel> <peak> <rms> <truePeak>` per channel of each meter node.
    static func levelMessages(_ s: GraphStatus) -> [OSCMessage] {
        s.peaks.map { OSCMessage("/agraph/peak", [.string($0.port), .float(Float($0.dBFS))]) }
            + s.meters.flatMap { r in
                r.channels.enumerated().map { c, v in
                    OSCMessage("/agraph/meter", [.string(r.node), .int32(Int32(c)), .float(Float(v.peakDBFS)),
                                                 .float(Float(v.rmsDBFS)), .float(Float(v.truePeakDBTP))])
                }
            }
    }

    static func positionMessage(_ s: GraphStatus) -> OSCMessage {
        OSCMessage("/agraph/position", [.float(Float(s.seconds)), .int64(Int64(s.frames)), .string(state(s))])
    }

    // MARK: subscriptions

    /// `/agraph/subscribe <what> [rate] [url]`.
    private func subscribe(_ m: OSCMessage, from sender: SocketAddress, now: Double) throws(Refusal) {
        let usage = "/agraph/subscribe takes what (meters, position or events), then optionally a rate in Hz (i h f d) and a target URL (osc.udp://HOST:PORT/)"
        guard let what = m.arguments.first?.text else { throw Refusal("\(usage); got \(m.typeTags)") }
        guard let kind = Kind(rawValue: what) else {
            throw Refusal("/agraph/subscribe: '\(what)' is not one of meters, position, events")
        }
        var rest = m.arguments.dropFirst()
        var rate = Limits.defaultRate
        if let r = rest.first?.number {
            guard Limits.rates.contains(r) else {
                throw Refusal("/agraph/subscribe: the rate must be from \(Limits.rates.lowerBound) to \(Limits.rates.upperBound) Hz (got \(r))")
            }
            rate = r
            rest = rest.dropFirst()
        }
        var target = sender
        if let url = rest.first?.text {
            do { target = try SocketAddress.resolve(url: url) } catch { throw Refusal("/agraph/subscribe: \(error.message)") }
            rest = rest.dropFirst()
        }
        guard rest.isEmpty else { throw Refusal("\(usage); got \(m.typeTags)") }

        let subscriber: Subscriber
        if let existing = subscribers.first(where: { $0.target == target }) {
            subscriber = existing
        } else {
            guard subscribers.count < Limits.subscribers else {
                throw Refusal("/agraph/subscribe: already \(Limits.subscribers) subscribers; one must unsubscribe first")
            }
            do { subscriber = Subscriber(target: target, socket: try UDPSocket.connected(to: target)) } catch {
                throw Refusal("/agraph/subscribe: \(error.message)")
            }
            subscribers.append(subscriber)
        }
        switch kind {
        case .meters: subscriber.meters = Periodic(interval: 1 / rate, next: now)
        case .position: subscriber.position = Periodic(interval: 1 / rate, next: now)
        case .events:
            if eventFeed == nil {
                let monitor = control.monitor
                eventFeed = (monitor, monitor.subscribe())
                nextEventPoll = now
            }
            subscriber.events = true
        }
        var details: [OSCArgument] = [.string(kind.rawValue), .string(target.url)]
        if kind != .events { details.append(.float(Float(rate))) }
        ok(m, details, to: sender)
    }

    /// `/agraph/unsubscribe [what] [url]`: `what` one kind or `all`.
    private func unsubscribe(_ m: OSCMessage, from sender: SocketAddress) throws(Refusal) {
        let usage = "/agraph/unsubscribe takes nothing (all), or what (meters, position, events, all) and optionally the target URL"
        guard m.arguments.count <= 2, m.arguments.allSatisfy({ $0.text != nil }) else { throw Refusal("\(usage); got \(m.typeTags)") }
        let what = m.arguments.first?.text ?? "all"
        guard what == "all" || Kind(rawValue: what) != nil else {
            throw Refusal("/agraph/unsubscribe: '\(what)' is not one of meters, position, events, all")
        }
        var target = sender
        if m.arguments.count == 2, let url = m.arguments[1].text {
            do { target = try SocketAddress.resolve(url: url) } catch { throw Refusal("/agraph/unsubscribe: \(error.message)") }
        }
        if let s = subscribers.first(where: { $0.target == target }) {
            if what == "all" || what == "meters" { s.meters = nil }
            if what == "all" || what == "position" { s.position = nil }
            if what == "all" || what == "events" { s.events = false }
            dropIdleSubscribers()
        }
        ok(m, [.string(what), .string(target.url)], to: sender)
    }

    private func dropIdleSubscribers() {
        subscribers.removeAll { $0.isIdle }
        if !subscribers.contains(where: \.events) { eventFeed = nil }
    }

    // MARK: time

    /// Sends what is due: acknowledgements, periodic subscriptions, events.
    func tick(now: Double) {
        follow()
        sendAcks()
        guard !subscribers.isEmpty else { return }
        var status: GraphStatus?
        func current() -> GraphStatus? {
            if status == nil { status = try? control.status() }
            return status
        }
        for s in subscribers {
            if var p = s.meters, p.next <= now {
                p.advance(now: now)
                s.meters = p
                if let st = current() {
                    let levels = Self.levelMessages(st)
                    if !levels.isEmpty { deliver(OSCPacket.encodeBundle(levels), to: s) }
                }
            }
            if var p = s.position, p.next <= now {
                p.advance(now: now)
                s.position = p
                if let st = current() { deliver(OSCPacket.encode(Self.positionMessage(st)), to: s) }
            }
        }
        if var feed = eventFeed, nextEventPoll <= now {
            nextEventPoll = now + Limits.eventPoll
            let monitor = feed.monitor
            monitor.poll()
            let events = monitor.events(since: &feed.cursor)
            eventFeed = feed
            for e in events {
                guard let message = Self.eventMessage(e) else { continue }
                let bytes = OSCPacket.encode(message)
                for s in subscribers where s.events { deliver(bytes, to: s) }
            }
        }
        subscribers.removeAll { $0.failures >= Limits.sendFailures }
        dropIdleSubscribers()
    }

    /// A last `tick` that looks at the event sources whether or not it is
    /// time: run before the thread ends.
    func flush(now: Double) {
        nextEventPoll = now
        tick(now: now)
    }

    /// How long the thread may sleep before `tick` has something to do, s.
    func wait(now: Double) -> Double {
        if !acks.isEmpty { return Limits.ackPoll }
        var next = now + Limits.idle
        for s in subscribers {
            if let p = s.meters { next = min(next, p.next) }
            if let p = s.position { next = min(next, p.next) }
        }
        if eventFeed != nil { next = min(next, nextEventPoll) }
        return max(next - now, 0)
    }

    private func sendAcks() {
        guard !acks.isEmpty else { return }
        let taken = engine.parameters.takenCount
        var n = 0
        while n < acks.count && acks[n].ticket <= taken {
            send(acks[n].message, to: acks[n].to)
            n += 1
        }
        if n > 0 { acks.removeFirst(n) }
    }

    // MARK: sending

    private func send(_ m: OSCMessage, to target: SocketAddress) {
        socket.send(OSCPacket.encode(m), to: target)
    }

    private func send(bundle messages: [OSCMessage], to target: SocketAddress) {
        socket.send(OSCPacket.encodeBundle(messages), to: target)
    }

    /// `/agraph/ok <address> [details…]`.
    private func ok(_ m: OSCMessage, _ details: [OSCArgument] = [], to target: SocketAddress) {
        send(OSCMessage("/agraph/ok", [.string(m.address)] + details), to: target)
    }

    /// `/agraph/error <address> <message>`.
    private func refuse(_ address: String, _ message: String, to target: SocketAddress) {
        let text = message.count > Limits.errorText ? String(message.prefix(Limits.errorText)) + "…" : message
        let quoted = address.count > 256 ? String(address.prefix(256)) + "…" : address
        // Kept before the answer: whoever saw the answer finds it kept.
        errorLog?.record(address: quoted, message: text, sender: target.hostAndPort.host + ":\(target.hostAndPort.port)",
                         now: MonotonicClock.seconds())
        send(OSCMessage("/agraph/error", [.string(quoted), .string(text)]), to: target)
    }

    /// Sends on the subscriber's own socket and counts failures (a full
    /// socket buffer is not one: that message is dropped); enough sends in
    /// a row that succeed forgive them.
    private func deliver(_ bytes: [UInt8], to s: Subscriber) {
        guard let error = s.socket.send(bytes) else {
            s.successes += 1
            if s.successes >= Limits.sendSuccesses { s.failures = 0 }
            return
        }
        if error == EAGAIN || error == EWOULDBLOCK || error == ENOBUFS || error == EINTR { return }
        s.failures += 1
        s.successes = 0
    }
}

/// A periodic subscription's schedule.
struct Periodic {
    var interval: Double
    var next: Double

    /// The next time after `now`; a late thread skips what it missed
    /// rather than sending a burst.
    mutating func advance(now: Double) {
        next += interval
        if next <= now { next = now + interval }
    }
}

/// One subscriber address and what it subscribed to. [control-thread]
final class Subscriber {
    let target: SocketAddress
    let socket: UDPSocket
    var meters: Periodic?
    var position: Periodic?
    var events = false
    /// Failed sends since the last `Limits.sendSuccesses` in a row.
    var failures = 0
    /// Sends in a row that succeeded.
    var successes = 0

    init(target: SocketAddress, socket: UDPSocket) {
        self.target = target
        self.socket = socket
    }

    var isIdle: Bool { meters == nil && position == nil && !events }
}

extension OSCService {
    /// The `/agraph/event/…` message for a monitor's event; nil for the
    /// events OSC does not send (docs/osc.md lists those it does).
    static func eventMessage(_ e: GraphEvent) -> OSCMessage? {
        switch e {
        case .xrun(let total): return OSCMessage("/agraph/event/xrun", [.int32(Int32(clamping: total))])
        case .underrun(let node, let total):
            return OSCMessage("/agraph/event/underrun", [.string(node), .int32(Int32(clamping: total))])
        case .playlist(let p):
            var args: [OSCArgument] = [.string(p.node), .string(""), .int32(Int32(clamping: p.item)), .string(p.path)]
            switch p.kind {
            case .started: args[1] = .string("started")
            case .ended: args[1] = .string("ended")
            case .skipped: args[1] = .string("skipped")
            case .failed(let reason):
                args[1] = .string("failed")
                args.append(.string(reason))
            }
            return OSCMessage("/agraph/event/item", args)
        case .reading(let node, let name, let value):
            return OSCMessage("/agraph/event/reading", [.string(node), .string(name), .float(Float(value))])
        case .paused(let paused): return OSCMessage("/agraph/event/state", [.string(paused ? "paused" : "playing")])
        case .endOfStream: return OSCMessage("/agraph/event/end")
        case .shutdown: return OSCMessage("/agraph/event/shutdown")
        case .dropped, .bufferSize, .connection, .reconnected, .route, .latencyNotAligned, .meter, .reloaded, .parameter:
            return nil
        }
    }
}
