package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/trellis-go/trellis/model"
	"github.com/trellis-go/trellis/tool"
)

// logInfo sends a log message at level info to the client.
func logInfo(ctx context.Context, msg string) { _ = tool.Log(ctx, tool.LogInfo, msg) }

// reportProgress reports progress of total.
func reportProgress(ctx context.Context, progress, total float64) {
	tool.ReportProgress(ctx, tool.Update{Progress: progress, Total: total})
}

// samplingTools returns test_sampling, which asks the client's model.
func samplingTools() ([]tool.Tool, error) {
	type in struct {
		Prompt string `json:"prompt" jsonschema:"the prompt to send to the model"`
	}
	return one(tool.NewFunc("test_sampling", "Asks the client's model to answer a prompt.",
		func(ctx context.Context, a in) (string, error) {
			res, err := tool.Sample(ctx, tool.SamplingRequest{
				Messages:  []model.Message{{Role: model.RoleUser, Content: []model.Part{model.TextPart(a.Prompt)}}},
				MaxTokens: 100,
			})
			if err != nil {
				return "", err
			}
			return "LLM response: " + res.Message.Text(), nil
		}))
}

// elicitationTools returns the tools that ask the client's user.
func elicitationTools() ([]tool.Tool, error) {
	type in struct {
		Message string `json:"message" jsonschema:"the message to show the user"`
	}
	basic, err := tool.NewFunc("test_elicitation", "Asks the client's user for a username and an email address.",
		func(ctx context.Context, a in) (string, error) {
			res, err := tool.Elicit(ctx, tool.ElicitRequest{Message: a.Message, Schema: json.RawMessage(userSchema)})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("User response: action=%s, content=%s", res.Action, jsonText(res.Content)), nil
		})
	if err != nil {
		return nil, err
	}
	out := []tool.Tool{basic}
	for name, schema := range map[string]string{
		"test_elicitation_sep1034_defaults": defaultsSchema,
		"test_elicitation_sep1330_enums":    enumsSchema,
	} {
		t, err := tool.NewFunc(name, "Asks the client's user to fill in a form.",
			func(ctx context.Context, _ noArgs) (string, error) {
				res, err := tool.Elicit(ctx, tool.ElicitRequest{Message: "Please fill in the form", Schema: json.RawMessage(schema)})
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("Elicitation completed: action=%s, content=%s", res.Action, jsonText(res.Content)), nil
			})
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func jsonText(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(raw)
}

const userSchema = `{"type":"object","properties":{
  "username":{"type":"string","description":"User's response"},
  "email":{"type":"string","description":"User's email address"}},
  "required":["username","email"]}`

// defaultsSchema has a default for each primitive type (SEP-1034).
const defaultsSchema = `{"type":"object","properties":{
  "name":{"type":"string","default":"John Doe"},
  "age":{"type":"integer","default":30},
  "score":{"type":"number","default":95.5},
  "status":{"type":"string","enum":["active","inactive","pending"],"default":"active"},
  "verified":{"type":"boolean","default":true}}}`

// enumsSchema has the five kinds of enum of SEP-1330.
const enumsSchema = `{"type":"object","properties":{
  "untitledSingle":{"type":"string","enum":["option1","option2","option3"]},
  "titledSingle":{"type":"string","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},
  "legacyEnum":{"type":"string","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},
  "untitledMulti":{"type":"array","items":{"type":"string","enum":["option1","option2","option3"]}},
  "titledMulti":{"type":"array","items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}}}`
