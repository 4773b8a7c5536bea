package langchaingo_test

import (
	"context"
	"fmt"

	lctools "github.com/tmc/langchaingo/tools"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
	"github.com/trellis-go/trellis/tool/langchaingo"
)

// langchaingo's calculator as a Trellis tool, called as a model would.
func ExampleFromTool() {
	calc, err := langchaingo.FromTool(lctools.Calculator{})
	if err != nil {
		panic(err)
	}
	r := tool.Invoke(context.Background(), calc, model.ToolCall{ID: "1", Name: tool.Name(calc), Arguments: []byte(`{"input":"(2+3)*4"}`)})
	fmt.Println(tool.Name(calc), r.Text())
	// Output: calculator 20
}
