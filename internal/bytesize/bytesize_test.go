package bytesize

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 bytes", 512: "512 bytes", 1023: "1023 bytes", 1 << 10: "1 KiB", 64 << 10: "64 KiB",
		1536: "1.5 KiB", 1 << 20: "1 MiB", 3 << 19: "1.5 MiB", 5 << 30: "5120 MiB",
	} {
		assert.Equal(t, want, Format(n), n)
	}
}
