#!/bin/sh
# A real local transcription program for the bridge's `transcription.command`: Debian's
# pocketsphinx (with its en-us model) recognises the audio file given last, within the JSGF
# grammar given first (a small grammar makes recognition of synthetic speech exact).
# sox brings the audio to the 16 kHz mono pocketsphinx expects.
set -eu
grammar="$1"
audio="$2"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sox -q "$audio" -r 16000 -c 1 "$dir/speech.wav"
pocketsphinx_continuous -infile "$dir/speech.wav" -jsgf "$grammar" -logfn /dev/null
