package modelmw_test

import (
	"iter"

	"github.com/trellis-go/trellis/model"
)

func iterPull(seq iter.Seq2[model.Chunk, error]) (func() (model.Chunk, error, bool), func()) {
	return iter.Pull2(seq)
}
