package callctx

import "github.com/trellis-go/trellis/model"

// PartOf returns the room for a result's part that f holds, without
// taking it.
func PartOf(f *Frame) *model.Part { return f.ctx.part }
