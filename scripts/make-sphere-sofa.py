#!/usr/bin/env python3
"""Writes Graphs/media/sphere-head.sofa: a second, open HRTF set for AudioGraph.

A rigid-sphere head model (C. P. Brown and R. O. Duda, "A structural model
for binaural sound synthesis", IEEE Trans. Speech Audio Proc. 6(5), 1998):
for each ear, the head-shadow filter

    H(w, theta) = (1 + j*alpha(theta)*w/(2*w0)) / (1 + j*w/(2*w0)),  w0 = c/a
    alpha(theta) = (1 + alpha_min/2) + (1 - alpha_min/2) * cos(pi * theta/theta_min)

and the Woodworth time of arrival

    T(theta) = -(a/c) cos(theta)           for theta <  pi/2
    T(theta) =  (a/c) (theta - pi/2)       for theta >= pi/2

where theta is the angle between the source direction and the ear's axis.
No pinna and no torso: the set is deliberately unlike a measured head (the
MIT KEMAR set Debian's libmysofa installs), which makes it a useful second
renderer for `agraph compare`. It is sampled at 48 kHz, 256 taps, on a grid of
5 degrees in azimuth and 10 degrees in elevation (-40 to 90), at 1.2 m.

The file follows AES69 (SOFA 1.0, SimpleFreeFieldHRIR) and is written with
netCDF4 (PyPI: netCDF4, numpy). It is committed; run this only to change it:

    python3 -m venv /tmp/sofa && /tmp/sofa/bin/pip install netCDF4 numpy
    /tmp/sofa/bin/python scripts/make-sphere-sofa.py Graphs/media/sphere-head.sofa

With --delays it writes Tests/Media/sphere-head-delays.sofa instead, the
tests' set with a Data.Delay per measurement and ear (dimensions M, R): the
whole samples of each ear's time of arrival move from the response into
Data.Delay (the response keeps BULK_DELAY and the fraction), on a coarse
grid (30 degrees in azimuth; -30, 0, 30 and 90 degrees in elevation):

    /tmp/sofa/bin/python scripts/make-sphere-sofa.py --delays Tests/Media/sphere-head-delays.sofa
"""
import sys
import datetime
import numpy as np
import netCDF4

RATE = 48000.0
TAPS = 256
HEAD_RADIUS = 0.0875       # metres
SPEED_OF_SOUND = 343.0     # metres per second
ALPHA_MIN = 0.1
THETA_MIN = np.radians(150.0)
BULK_DELAY = 16            # samples before the earliest arrival (room for the fractional delay)
DISTANCE = 1.2
EAR_AZIMUTH = 90.0         # ears on the interaural axis, at +-90 degrees


def unit(azimuth_deg, elevation_deg):
    az, el = np.radians(azimuth_deg), np.radians(elevation_deg)
    return np.array([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)])


def ear_response(source, ear, split_delay=False):
    """The impulse response of one ear for a unit source direction; with
    split_delay, the response without the whole samples of its arrival
    time, and those samples (for Data.Delay)."""
    theta = np.arccos(np.clip(np.dot(source, ear), -1.0, 1.0))
    alpha = (1 + ALPHA_MIN / 2) + (1 - ALPHA_MIN / 2) * np.cos(np.pi * theta / THETA_MIN)
    a_over_c = HEAD_RADIUS / SPEED_OF_SOUND
    if theta < np.pi / 2:
        arrival = -a_over_c * np.cos(theta)
    else:
        arrival = a_over_c * (theta - np.pi / 2)
    delay = BULK_DELAY + (arrival + a_over_c) * RATE      # samples, >= BULK_DELAY
    whole = 0
    if split_delay:
        whole = int(np.floor((arrival + a_over_c) * RATE))
        delay -= whole
    # Designed on a long grid so that circular wrap-around is negligible,
    # then cut to TAPS with a short fade at the end.
    long_n = TAPS * 8
    w = 2 * np.pi * np.fft.rfftfreq(long_n, 1 / RATE)
    w0 = SPEED_OF_SOUND / HEAD_RADIUS
    shadow = (1 + 1j * alpha * w / (2 * w0)) / (1 + 1j * w / (2 * w0))
    spectrum = shadow * np.exp(-1j * w * delay / RATE)
    # A half-band-limited fractional delay: roll off the top octave's edge
    # so the delay's sinc stays short.
    nyquist = RATE / 2
    f = w / (2 * np.pi)
    taper = np.where(f < 0.9 * nyquist, 1.0, 0.5 * (1 + np.cos(np.pi * (f - 0.9 * nyquist) / (0.1 * nyquist))))
    ir = np.fft.irfft(spectrum * taper, long_n)[:TAPS]
    fade = 32
    ir[-fade:] *= 0.5 * (1 + np.cos(np.pi * np.arange(fade) / fade))
    return (ir, whole) if split_delay else ir


def main(path, delays=False):
    positions = []
    elevations, step = ([-30, 0, 30, 90], 30.0) if delays else (range(-40, 91, 10), 5.0)
    for elevation in elevations:
        if elevation == 90:
            positions.append((0.0, 90.0))
            continue
        for azimuth in np.arange(0.0, 360.0, step):
            positions.append((float(azimuth), float(elevation)))
    m = len(positions)
    left_ear, right_ear = unit(EAR_AZIMUTH, 0), unit(-EAR_AZIMUTH, 0)
    irs = np.zeros((m, 2, TAPS))
    whole = np.zeros((m, 2))
    for i, (az, el) in enumerate(positions):
        s = unit(az, el)
        if delays:
            irs[i, 0], whole[i, 0] = ear_response(s, left_ear, split_delay=True)
            irs[i, 1], whole[i, 1] = ear_response(s, right_ear, split_delay=True)
        else:
            irs[i, 0] = ear_response(s, left_ear)
            irs[i, 1] = ear_response(s, right_ear)

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    ds = netCDF4.Dataset(path, "w", format="NETCDF4")
    attrs = {
        "Conventions": "SOFA", "Version": "1.0",
        "SOFAConventions": "SimpleFreeFieldHRIR", "SOFAConventionsVersion": "1.0",
        "APIName": "AudioGraph scripts/make-sphere-sofa.py", "APIVersion": "1.0",
        "ApplicationName": "AudioGraph", "ApplicationVersion": "1.0",
        "AuthorContact": "AudioGraph project", "Organization": "AudioGraph project",
        "License": "CC0 1.0 (public domain dedication)",
        "DataType": "FIR", "RoomType": "free field",
        "Title": "Rigid-sphere head model (Brown and Duda 1998), no pinna"
                 + (", arrival times in Data.Delay" if delays else ""),
        "ListenerShortName": "sphere-head", "DatabaseName": "AudioGraph",
        "DateCreated": now, "DateModified": now,
        "Comment": "head radius %.4f m, c %.0f m/s, alpha_min %.2f, theta_min 150 deg, ears at +-90 deg"
                   % (HEAD_RADIUS, SPEED_OF_SOUND, ALPHA_MIN),
        "References": "C. P. Brown, R. O. Duda, A structural model for binaural sound synthesis, IEEE TSAP 6(5) 1998",
        "Origin": "computed", "History": "written by scripts/make-sphere-sofa.py",
    }
    for k, v in attrs.items():
        ds.setncattr(k, v)
    for name, size in (("I", 1), ("C", 3), ("R", 2), ("E", 1), ("N", TAPS), ("M", m), ("S", 0)):
        ds.createDimension(name, size if name != "S" else None)

    def var(name, dims, values, **attrs):
        v = ds.createVariable(name, "f8", dims, zlib=True, complevel=6)
        v[:] = values
        for k, a in attrs.items():
            v.setncattr(k, a)

    var("ListenerPosition", ("I", "C"), [[0, 0, 0]], Type="cartesian", Units="metre")
    var("ListenerUp", ("I", "C"), [[0, 0, 1]])
    var("ListenerView", ("I", "C"), [[1, 0, 0]], Type="cartesian", Units="metre")
    var("ReceiverPosition", ("R", "C", "I"), [[[0], [HEAD_RADIUS], [0]], [[0], [-HEAD_RADIUS], [0]]],
        Type="cartesian", Units="metre")
    var("SourcePosition", ("M", "C"), [[az, el, DISTANCE] for az, el in positions],
        Type="spherical", Units="degree, degree, metre")
    var("EmitterPosition", ("E", "C", "I"), [[[0], [0], [0]]], Type="cartesian", Units="metre")
    var("Data.IR", ("M", "R", "N"), irs)
    var("Data.SamplingRate", ("I",), [RATE], Units="hertz")
    if delays:
        var("Data.Delay", ("M", "R"), whole)
    else:
        var("Data.Delay", ("I", "R"), [[0, 0]])
    ds.close()
    print("wrote %s: %d directions, %d taps at %d Hz" % (path, m, TAPS, RATE))


if __name__ == "__main__":
    args = sys.argv[1:]
    with_delays = "--delays" in args
    args = [a for a in args if a != "--delays"]
    default = "Tests/Media/sphere-head-delays.sofa" if with_delays else "Graphs/media/sphere-head.sofa"
    main(args[0] if args else default, delays=with_delays)
