package main

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
)

// redPixelPNG returns a 1×1 red PNG image.
func redPixelPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	_ = png.Encode(&b, img) // writing to memory cannot fail
	return b.Bytes()
}

// silentWAV returns a short silent WAV file: 8 kHz, 8-bit mono PCM, 80
// samples (10 ms).
func silentWAV() []byte {
	const rate, samples = 8000, 80
	var b bytes.Buffer
	le := binary.LittleEndian
	b.WriteString("RIFF")
	_ = binary.Write(&b, le, uint32(36+samples))
	b.WriteString("WAVEfmt ")
	_ = binary.Write(&b, le, uint32(16)) // fmt chunk size
	_ = binary.Write(&b, le, uint16(1))  // PCM
	_ = binary.Write(&b, le, uint16(1))  // mono
	_ = binary.Write(&b, le, uint32(rate))
	_ = binary.Write(&b, le, uint32(rate)) // bytes per second
	_ = binary.Write(&b, le, uint16(1))    // block align
	_ = binary.Write(&b, le, uint16(8))    // bits per sample
	b.WriteString("data")
	_ = binary.Write(&b, le, uint32(samples))
	b.Write(bytes.Repeat([]byte{128}, samples)) // 8-bit silence is 128
	return b.Bytes()
}
