import Foundation

/// Makes real HE-AAC (AAC LC + SBR) and HE-AACv2 (+ parametric stereo)
/// streams for tests, out of an AAC LC stream that ffmpeg's native encoder
/// wrote: Debian's ffmpeg cannot encode HE-AAC (its `aac` encoder is LC
/// only, libfdk-aac is not there), and no sample file is committed.
///
/// References are to ISO/IEC 14496-3 (2009 edition's subclauses; the
/// syntax element names are exact): the raw_data_block, fill_element and
/// extension_payload syntax (4.4.2), the SBR payload syntax
/// (sbr_extension_data … sbr_noise, 4.4.2.8), SBR decoding (4.6.18), the
/// parametric stereo syntax and decoding (ps_data, clause 8).
///
/// Input: ADTS (1.A.2), AAC LC at a core rate of
/// 24 kHz, mono (one SCE) or stereo (one CPE), no CRC, one raw_data_block
/// per frame, as `ffmpeg -ar 24000 -c:a aac -f adts` writes it.
///
/// What it writes, frame by frame:
/// - The raw_data_block ends with ID_END (`111`) padded with zeros to the
///   byte (ffmpeg's encoder pads with zeros), so the last 1 bit of the
///   frame is END's last: END is cut there, and a FIL element (ID_FIL = 6,
///   4-bit count, 8-bit escape from 15) is appended carrying an
///   extension_payload of type EXT_SBR_DATA (13) for the channel element
///   before it; then END, zeros to the byte, and the
///   ADTS frame length is rewritten.
/// - sbr_extension_data (4.4.2.8): a header in every frame (so a decoder
///   that starts at any frame, after a seek, has one): bs_amp_res 0,
///   bs_start_freq 8 and bs_stop_freq 15, which at the 48 kHz output give
///   k0 = 16 and k2 = 3·k0 = 48 QMF bands (375 Hz each): SBR from 6 kHz to
///   18 kHz; bs_xover_band 0; bs_freq_scale 0 and bs_alter_scale 1, so the
///   master frequency band table (4.6.18.3) is linear, 16 bands of 2 QMF
///   bands (the low-resolution table: 8 bands of 4); bs_noise_bands 0, so
///   there is one noise floor band (N_Q = 1); bs_limiter_bands 0 and
///   bs_limiter_gains 3 (the limiter off: the noise floor in bands with
///   nothing to patch from is not limited away); bs_interpol_freq 1,
///   bs_smoothing_mode 1.
/// - sbr_data: for a CPE, bs_coupling 0 (each channel its own envelope);
///   sbr_grid FIXFIX with one envelope and one noise floor over the frame,
///   low frequency resolution; both delta-coded in frequency (bs_df_env 0,
///   bs_df_noise 0); bs_invf_mode 0 (no inverse filtering); the envelope
///   as bs_env_start_value (7 bits: with one FIXFIX envelope the amplitude
///   resolution is 1.5 dB) and 7 frequency deltas of 0 (Huffman
///   f_huffman_env_1_5dB, code `00`): the same level in every band; the
///   noise floor as bs_noise_start_value (5 bits); no sinusoids
///   (bs_add_harmonic_flag 0).
/// - With `parametricStereo` (mono core only): bs_extended_data 1 with
///   EXTENSION_ID_PS (2) and ps_data: a PS header in every
///   frame, IID on in the coarse 10-band mode (iid_mode 0), ICC off (full
///   correlation: no decorrelated signal is mixed in), no extension; one
///   envelope (frame_class 0, num_env_idx 1); the IID index `pan` in every
///   band, delta-coded in frequency (huff_iid_df coarse). A decoder outputs
///   stereo: the mono signal scaled by `panGains(pan)`.
///
/// The SBR and PS signalling is implicit: nothing in the
/// ADTS header or an MP4's AudioSpecificConfig says SBR; a decoder finds
/// the SBR data in the first frame and doubles the rate (libavcodec then
/// reports HE-AAC, or HE-AACv2 with PS, at 48 kHz, frames of 2048).
///
/// What it does not do: no psychoacoustics and no analysis of the signal:
/// the envelope is a fixed level per channel, not measured from any
/// input; the core is whatever the LC encoder made of the whole band (a
/// decoder replaces everything above the crossover with the SBR band).
/// With the noise floor at its highest (`noiseFloor` 0: Q = 2^6) the
/// SBR band is noise at the envelope's level (plus the patched low band
/// at about 1/65 of it), so its level is known: see `sbrBandMeanSquare`.
public struct HEAACStreamWriter: Sendable {
    /// The core's sampling rate and the output's.
    public static let coreRate = 24_000
    public static let outputRate = 48_000
    /// Output samples per frame (1024 core samples, doubled).
    public static let frameSamples = 2048
    /// The SBR range in QMF bands at the output rate (k0 = kx, k2) and in Hz.
    public static let startBand = 16, stopBand = 48
    public static let crossoverHz = Double(startBand) * Double(outputRate) / 128
    public static let stopHz = Double(stopBand) * Double(outputRate) / 128

    /// bs_env_start_value of each channel of the core (SCE: one, CPE: two),
    /// 0…127 in 1.5 dB steps: the SBR band's level (see `sbrBandMeanSquare`).
    public var envelope: [Int]
    /// bs_noise_start_value, 0…30: the noise floor Q = 2^(6 − value)
    /// relative to the envelope (0: the band is noise).
    public var noiseFloor: Int
    /// The IID index of a parametric stereo extension (coarse table,
    /// −3…3: 0, ±2, ±4, ±7 dB, positive louder on the left); nil: no PS.
    public var parametricStereo: Int?
    /// The SBR header goes in every `headerPeriod`-th frame, the first
    /// included (1: every frame). Encoders repeat it less often: FDK AAC's
    /// default is about once a second (23 frames at 48 kHz); a decoder
    /// started between two headers decodes no SBR until the next one.
    public var headerPeriod: Int

    public init(envelope: [Int], noiseFloor: Int = 0, parametricStereo: Int? = nil, headerPeriod: Int = 1) {
        self.envelope = envelope
        self.noiseFloor = noiseFloor
        self.parametricStereo = parametricStereo
        self.headerPeriod = headerPeriod
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// The rewritten stream and its number of frames.
    public struct Stream: Sendable {
        public var bytes: [UInt8]
        public var frames: Int
        /// The decoded length at the output rate: every frame's 2048 samples
        /// (ADTS says nothing of the encoder's delay or padding).
        public var outputSamples: Int { frames * HEAACStreamWriter.frameSamples }
    }

    /// The HE-AAC (or HE-AACv2) stream for an AAC LC ADTS stream.
    public func rewrite(adts: [UInt8]) throws -> Stream {
        guard envelope.allSatisfy({ (0...127).contains($0) }) else { throw Failure("envelope values are 7-bit (0…127)") }
        guard (0...30).contains(noiseFloor) else { throw Failure("the noise floor is 0…30") }
        if let pan = parametricStereo, !(-3...3).contains(pan) { throw Failure("the IID index is −3…3") }
        guard headerPeriod >= 1 else { throw Failure("the header period is at least 1 frame") }
        var out: [UInt8] = []
        out.reserveCapacity(adts.count + adts.count / 8)
        var at = 0, frames = 0
        while at < adts.count {
            guard adts.count - at >= 7, adts[at] == 0xFF, adts[at + 1] & 0xF6 == 0xF0 else {
                throw Failure("no ADTS sync word at byte \(at)")
            }
            let h = Array(adts[at..<(at + 7)])
            guard h[1] & 1 == 1 else { throw Failure("frame \(frames): ADTS with CRC (protection_absent 0) is not handled") }
            guard h[2] >> 6 == 1 else { throw Failure("frame \(frames): not AAC LC (profile \(h[2] >> 6))") }
            guard (h[2] >> 2) & 0xF == 6 else { throw Failure("frame \(frames): the core rate is not 24 kHz (index \((h[2] >> 2) & 0xF))") }
            let channels = Int(h[2] & 1) << 2 | Int(h[3] >> 6)
            let length = Int(h[3] & 3) << 11 | Int(h[4]) << 3 | Int(h[5] >> 5)
            guard h[6] & 3 == 0 else { throw Failure("frame \(frames): more than one raw_data_block") }
            guard channels == 1 || channels == 2 else { throw Failure("frame \(frames): channel_configuration \(channels) (1 or 2 handled)") }
            guard envelope.count == channels else { throw Failure("\(envelope.count) envelope values for \(channels) channels") }
            guard parametricStereo == nil || channels == 1 else { throw Failure("parametric stereo needs a mono core") }
            guard length > 7, at + length <= adts.count else { throw Failure("frame \(frames): length \(length) past the end") }
            let body = try Self.addSBR(to: Array(adts[(at + 7)..<(at + length)]), payload: sbrExtension(channels: channels, header: frames % headerPeriod == 0),
                                       frame: frames)
            let total = body.count + 7
            guard total < 1 << 13 else { throw Failure("frame \(frames) too long for ADTS") }
            var header = h
            header[3] = header[3] & 0xFC | UInt8(total >> 11)
            header[4] = UInt8(total >> 3 & 0xFF)
            header[5] = header[5] & 0x1F | UInt8(total & 7) << 5
            out += header + body
            at += length
            frames += 1
        }
        return Stream(bytes: out, frames: frames)
    }

    /// A raw_data_block with END cut off, a FIL element with `payload`
    /// (an EXT_SBR_DATA extension_payload after its type) appended, and END.
    static func addSBR(to block: [UInt8], payload: BitWriter, frame: Int) throws -> [UInt8] {
        guard let lastByte = block.lastIndex(where: { $0 != 0 }) else { throw Failure("frame \(frame): an empty raw_data_block") }
        let lastBit = lastByte * 8 + 7 - block[lastByte].trailingZeroBitCount
        var w = BitWriter()
        for b in block { w.put(Int(b), 8) }
        guard lastBit >= 2, w.bit(lastBit) == 1, w.bit(lastBit - 1) == 1, w.bit(lastBit - 2) == 1 else {
            throw Failure("frame \(frame) does not end with ID_END and zeros")
        }
        let end = lastBit - 2
        var out = BitWriter()
        for i in 0..<end { out.put(w.bit(i), 1) }
        // fill_element: ID_FIL, count (escaped from 15: count = 15 + esc − 1),
        // then the extension_payload: its type and the SBR bits, padded to
        // the count's bytes.
        let bits = 4 + payload.count
        let count = (bits + 7) / 8
        out.put(6, 3)
        if count >= 15 {
            out.put(15, 4)
            out.put(count - 14, 8)
        } else {
            out.put(count, 4)
        }
        out.put(13, 4)                      // EXT_SBR_DATA
        out.append(payload)
        out.put(0, count * 8 - bits)
        out.put(7, 3)                       // ID_END
        out.alignWithZeros()
        return out.bytes
    }

    /// sbr_extension_data for one SCE (`channels` 1) or CPE (2), after the
    /// extension type, with or without the SBR header.
    func sbrExtension(channels: Int, header: Bool) -> BitWriter {
        var w = BitWriter()
        w.put(header ? 1 : 0, 1)            // bs_header_flag
        if header { Self.sbrHeader(&w) }
        sbrData(&w, channels: channels)
        return w
    }

    /// sbr_header.
    static func sbrHeader(_ w: inout BitWriter) {
        w.put(0, 1)                         // bs_amp_res
        w.put(8, 4)                         // bs_start_freq: k0 = 11 + 5 = 16
        w.put(15, 4)                        // bs_stop_freq: k2 = 3·k0 = 48
        w.put(0, 3)                         // bs_xover_band
        w.put(0, 2)                         // bs_reserved
        w.put(1, 1)                         // bs_header_extra_1
        w.put(1, 1)                         // bs_header_extra_2
        w.put(0, 2)                         // bs_freq_scale: linear
        w.put(1, 1)                         // bs_alter_scale: bands of 2
        w.put(0, 2)                         // bs_noise_bands: N_Q = 1
        w.put(0, 2)                         // bs_limiter_bands: one
        w.put(3, 2)                         // bs_limiter_gains: off
        w.put(1, 1)                         // bs_interpol_freq
        w.put(1, 1)                         // bs_smoothing_mode
    }

    /// sbr_data: an SCE's (with the PS extension when asked) or a CPE's.
    func sbrData(_ w: inout BitWriter, channels: Int) {
        if channels == 1 {
            // sbr_single_channel_element
            w.put(0, 1)                     // bs_data_extra
            grid(&w)
            w.put(0, 1)                     // bs_df_env[0]
            w.put(0, 1)                     // bs_df_noise[0]
            w.put(0, 2)                     // bs_invf_mode[0]
            envelope(&w, envelope[0])
            w.put(noiseFloor, 5)            // bs_noise_start_value_level
            w.put(0, 1)                     // bs_add_harmonic_flag
            if let pan = parametricStereo {
                let ps = Self.psData(iid: pan)
                // bs_extended_data: bs_extension_size bytes hold the 2-bit
                // bs_extension_id and ps_data (fewer than 8 bits left over).
                let size = (2 + ps.count + 7) / 8
                w.put(1, 1)                 // bs_extended_data
                if size >= 15 {
                    w.put(15, 4)
                    w.put(size - 15, 8)     // bs_esc_count
                } else {
                    w.put(size, 4)
                }
                w.put(2, 2)                 // EXTENSION_ID_PS
                w.append(ps)
                w.put(0, size * 8 - 2 - ps.count)
            } else {
                w.put(0, 1)                 // bs_extended_data
            }
        } else {
            // sbr_channel_pair_element, uncoupled
            w.put(0, 1)                     // bs_data_extra
            w.put(0, 1)                     // bs_coupling
            grid(&w)
            grid(&w)
            w.put(0, 2)                     // bs_df_env, bs_df_noise (left)
            w.put(0, 2)                     // (right)
            w.put(0, 2)                     // bs_invf_mode (left)
            w.put(0, 2)                     // (right)
            envelope(&w, envelope[0])
            envelope(&w, envelope[1])
            w.put(noiseFloor, 5)            // bs_noise_start_value_level (left)
            w.put(noiseFloor, 5)            // (right)
            w.put(0, 2)                     // bs_add_harmonic_flag (left, right)
            w.put(0, 1)                     // bs_extended_data
        }
    }

    /// sbr_grid: FIXFIX, one envelope, low frequency resolution.
    func grid(_ w: inout BitWriter) {
        w.put(0, 2)                         // bs_frame_class FIXFIX
        w.put(0, 2)                         // tmp: bs_num_env = 2^0
        w.put(0, 1)                         // bs_freq_res
    }

    /// sbr_envelope, one envelope in frequency-delta coding: the start
    /// value (7 bits at 1.5 dB) and a delta of 0 for each of the other 7
    /// low-resolution bands (f_huffman_env_1_5dB: `00`).
    func envelope(_ w: inout BitWriter, _ level: Int) {
        w.put(level, 7)
        for _ in 1..<Self.lowResolutionBands { w.put(code: "00") }
    }

    /// The low-resolution frequency band table's bands: half the master
    /// table's 16 (4.6.18.3, with bs_freq_scale 0, bs_alter_scale 1).
    static let lowResolutionBands = (stopBand - startBand) / 2 / 2

    /// ps_data with a header: IID in the coarse 10-band mode, the index
    /// `iid` in every band; ICC off; one envelope.
    static func psData(iid: Int) -> BitWriter {
        // huff_iid_df for coarse quantisation, the deltas −3…3.
        let iidDelta = [-3: "11101", -2: "1101", -1: "101", 0: "0", 1: "100", 2: "1100", 3: "11100"]
        var w = BitWriter()
        w.put(1, 1)                         // enable_ps_header
        w.put(1, 1)                         // enable_iid
        w.put(0, 3)                         // iid_mode 0: 10 bands, coarse
        w.put(0, 1)                         // enable_icc
        w.put(0, 1)                         // enable_ext
        w.put(0, 1)                         // frame_class
        w.put(1, 2)                         // num_env_idx: one envelope
        w.put(0, 1)                         // iid_dt: in frequency
        w.put(code: iidDelta[iid]!)         // the first band, from 0
        for _ in 1..<10 { w.put(code: iidDelta[0]!) }
        return w
    }

    // MARK: What a decoder gives

    /// The mean square (full scale ±1) of the whole SBR range, 6–18 kHz,
    /// for an envelope value, when the noise floor dominates it (the
    /// default `noiseFloor`): each of the 32 QMF bands carries E_orig =
    /// 64·2^(value/2) per subband sample in the 16-bit scale (the SBR
    /// dequantisation of 4.6.18, amplitude resolution 1.5 dB), and the 64-band
    /// synthesis gives a mean square of ΣE/(2·64²) (libavcodec's scale;
    /// found by measurement, within 0.2 dB).
    public static func sbrBandMeanSquare(envelope value: Int) -> Double {
        let bands = Double(stopBand - startBand)
        let energy = 64 * pow(2, Double(value) / 2)
        return bands * energy / (2 * 64 * 64) / (32768 * 32768)
    }

    /// The coarse IID quantisation table's level differences in dB for
    /// indices 0…3 (negative indices: the same, right louder).
    public static let iidDecibels: [Double] = [0, 2, 4, 7]

    /// The amplitude gains of the left and right outputs for a mono core
    /// under IID index `iid` and full correlation: c = 10^(IID/20),
    /// left = c·√(2/(1+c²)), right = √(2/(1+c²)).
    public static func panGains(iid: Int) -> (left: Double, right: Double) {
        let db = iidDecibels[abs(iid)] * (iid < 0 ? -1 : 1)
        let c = pow(10, db / 20)
        let r = (2 / (1 + c * c)).squareRoot()
        return (c * r, r)
    }
}
