package modelmw_test

import (
	"iter"

	"github.com/trellis-go/trellis/model"
)

// userReq is a request of one user message.
func userReq(text string) *model.Request {
	return &model.Request{Messages: []model.Message{model.User(text)}}
}

// textOf collects a stream's text, and its error.
func textOf(seq iter.Seq2[model.Chunk, error]) (string, error) {
	resp, err := model.Collect(seq)
	if err != nil {
		return "", err
	}
	return resp.Message.Text(), nil
}
