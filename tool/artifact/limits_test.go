package artifact_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-go/trellis/tool/artifact"
)

// controlKeys returns n distinct metadata keys of three bytes that JSON
// escapes to six bytes each: metadata of at most MaxMetadataSize bytes
// that takes eight times as many in a version file's header.
func controlKeys(n int) map[string]string {
	var chars []byte
	for c := byte(1); c < 0x20; c++ {
		if c != '\b' && c != '\t' && c != '\n' && c != '\f' && c != '\r' {
			chars = append(chars, c)
		}
	}
	chars = append(chars, '<', '>', '&')
	meta := map[string]string{}
	for _, a := range chars {
		for _, b := range chars {
			for _, c := range chars {
				if len(meta) == n {
					return meta
				}
				meta[string([]byte{a, b, c})] = ""
			}
		}
	}
	return meta
}

// Metadata within MaxMetadataSize can always be read back, however much
// escaping it takes in a file.
func TestStoreReadsBackTheLargestMetadata(t *testing.T) {
	meta := controlKeys(artifact.MaxMetadataSize / 3)
	each(t, func(t *testing.T, mk func(...artifact.Option) artifact.Store) {
		ctx := context.Background()
		s := mk()
		if _, err := s.Save(ctx, thread, "m.txt", artifact.Artifact{Data: []byte("x"), Metadata: meta}); err != nil {
			t.Fatal(err)
		}
		vs, err := s.Versions(ctx, thread, "m.txt")
		if err != nil {
			t.Fatalf("versions: %v", err)
		}
		if len(vs[0].Metadata) != len(meta) {
			t.Errorf("versions: %d metadata keys, want %d", len(vs[0].Metadata), len(meta))
		}
		if got := names(t, s, thread); len(got) != 1 {
			t.Errorf("list: %v", got)
		}
		a, err := s.Load(ctx, thread, "m.txt", 0)
		if err != nil {
			t.Fatalf("load: %v", err)
		}
		if len(a.Metadata) != len(meta) {
			t.Errorf("load: %d metadata keys, want %d", len(a.Metadata), len(meta))
		}
	})
}

// Metadata that is not UTF-8 cannot be kept as it is in every store (a
// JSON file turns it into U+FFFD): every store refuses it alike.
func TestStoreRefusesMetadataThatIsNotUTF8(t *testing.T) {
	each(t, func(t *testing.T, mk func(...artifact.Option) artifact.Store) {
		s := mk()
		for _, meta := range []map[string]string{{"k": "\xff"}, {"\xfe": "v"}} {
			_, err := s.Save(context.Background(), thread, "m.txt", artifact.Artifact{Data: []byte("x"), Metadata: meta})
			if !errors.Is(err, artifact.ErrInvalidArtifact) || !strings.Contains(err.Error(), "not valid UTF-8") {
				t.Errorf("save with metadata %q: %v", meta, err)
			}
		}
	})
}

// A media type is short: a model cannot make one of a megabyte.
func TestStoreRefusesAHugeMediaType(t *testing.T) {
	mt := "text/plain; x=" + strings.Repeat("a", 1<<20)
	each(t, func(t *testing.T, mk func(...artifact.Option) artifact.Store) {
		_, err := mk().Save(context.Background(), thread, "m.txt", artifact.Artifact{Data: []byte("x"), MediaType: mt})
		if !errors.Is(err, artifact.ErrInvalidArtifact) || len(err.Error()) > 200 {
			t.Errorf("save with a media type of %d bytes: %.300v", len(mt), err)
		}
	})
}

// A version file whose header never ends (written by someone else) is not
// read whole into memory: Load refuses it as Versions does.
func TestDirDoesNotReadAnEndlessHeader(t *testing.T) {
	root := t.TempDir()
	d := newDir(t, root)
	save(t, d, thread, "h.txt", "x")
	file := filepath.Join(root, "app", "ada", "thread", "t1", "h.txt", "2")
	huge := "trellis-artifact 1\n{\"name\":\"h.txt\",\"media_type\":\"text/plain\",\"size\":1,\"saved\":\"2025-01-01T00:00:00Z\",\"metadata\":{\"k\":\"" +
		strings.Repeat("v", 2<<20) + "\"}}\nx"
	if err := os.WriteFile(file, []byte(huge), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := d.Load(context.Background(), thread, "h.txt", 2)
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("load of a version whose header is 2 MiB long: %v", err)
	}
}
