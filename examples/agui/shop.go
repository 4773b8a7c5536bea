package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/model/scripted"
	"github.com/trellis-go/trellis/tool"
)

// product is an item of the shop's catalogue.
type product struct {
	SKU, Name string
	Price     float64
}

var catalogue = []product{
	{"L-42", "Brass desk lamp", 39.90},
	{"L-07", "Paper floor lamp", 54.00},
	{"M-11", "Oak monitor stand", 72.50},
	{"C-03", "Linen cushion", 18.00},
}

type findArgs struct {
	Query string `json:"query" jsonschema:"description=What the user looks for, in a word or two"`
}

// findProduct is the agent's own tool: it searches the catalogue.
func findProduct() tool.Tool {
	return tool.MustFunc("find_product", "Searches the shop's catalogue. Returns matching products with SKU, name and price.",
		func(_ context.Context, in findArgs) (string, error) {
			q := strings.ToLower(strings.TrimSpace(in.Query))
			var lines []string
			for _, p := range catalogue {
				if q != "" && strings.Contains(strings.ToLower(p.Name), strings.TrimSuffix(q, "s")) {
					lines = append(lines, fmt.Sprintf("%s: %s, %.2f EUR", p.SKU, p.Name, p.Price))
				}
			}
			if len(lines) == 0 {
				return "No product matches " + fmt.Sprintf("%q", in.Query) + ".", nil
			}
			return strings.Join(lines, "\n"), nil
		}, tool.WithMetadata(tool.Metadata{ReadOnly: true, ConcurrencySafe: true}))
}

// offline is the scripted model: it plays the assistant by reading the
// conversation, as a real model would. A user message starts a search; a
// search result makes it ask the page to add the first product; the page's
// answer makes it confirm.
func offline() *scripted.Model {
	step := scripted.Func(func(req *model.Request) (*model.Response, error) {
		msgs := req.Messages
		last := msgs[len(msgs)-1]
		switch {
		case last.Role == model.RoleUser:
			q := "lamp"
			if strings.Contains(strings.ToLower(last.Text()), "cushion") {
				q = "cushion"
			}
			return &model.Response{Message: model.Assistant("Let me look that up.",
				model.ToolCall{Name: "find_product", Arguments: []byte(fmt.Sprintf(`{"query":%q}`, q))})}, nil
		case last.Role == model.RoleTool && last.ToolName == "find_product":
			sku, _, _ := strings.Cut(last.Text(), ":")
			if strings.HasPrefix(last.Text(), "No product") {
				return &model.Response{Message: model.Assistant("Sorry, the shop has nothing like that.")}, nil
			}
			return &model.Response{Message: model.Assistant("",
				model.ToolCall{Name: "add_to_cart", Arguments: []byte(fmt.Sprintf(`{"sku":%q,"quantity":1}`, sku))})}, nil
		case last.Role == model.RoleTool && last.ToolName == "add_to_cart":
			if last.IsError {
				return &model.Response{Message: model.Assistant("The page could not add it: " + last.Text())}, nil
			}
			return &model.Response{Message: model.Assistant("Done: " + last.Text() + " " + cartLine(req))}, nil
		}
		return nil, fmt.Errorf("offline script: no move after a %s message", last.Role)
	})
	m := scripted.New()
	m.Name = "shop-assistant"
	m.Fallback = &step
	return m
}

// cartLine repeats what the page's context says of the cart, which the
// system prompt carries.
func cartLine(req *model.Request) string {
	if len(req.Messages) == 0 || req.Messages[0].Role != model.RoleSystem {
		return ""
	}
	for _, line := range strings.Split(req.Messages[0].Text(), "\n") {
		if _, rest, ok := strings.Cut(line, "- the cart: "); ok {
			return "(Your cart now holds: " + rest + ".)"
		}
	}
	return ""
}
