package agui

import (
	"context"
	"net/http"
	"net/url"
)

// OwnedThreadPrefix starts the checkpointer thread of an AG-UI thread
// whose handler knows owners (WithOwner): the conversation of threadId
// "t1" of owner "ada" is thread "agui/ada/t1" (see ThreadKey). It differs
// from ThreadPrefix, so that no thread of a handler without owners is
// ever a thread of an owner.
const OwnedThreadPrefix = "agui/"

// WithOwner makes the handler ask owner who sends each request, before it
// reads the body: owner returns the request's owner (a user, a tenant,
// an API key's holder), or an error, which refuses the request with 401
// and a message that does not tell the error's text. An empty owner
// refuses the request too.
//
// With a checkpointer, threads are scoped to their owner: the thread an
// owner's request names is that owner's alone (ThreadKey), so a thread ID
// sent by someone else names another, new thread of theirs, and nothing
// of the first is read, continued or told (not even that it exists).
// Since the owner is part of the thread's key in the checkpointer, this
// holds across processes and restarts. Without a checkpointer nothing is
// kept between requests, and owner only authorizes them.
//
// The run's context carries the owner (OwnerFrom), for tools that keep
// data of their own. The handler does not authenticate: owner reads who
// the request is from as the application's authentication established it,
// typically from a value a middleware in front of the handler put in the
// request's context (see the example).
func WithOwner(owner func(r *http.Request) (string, error)) Option {
	return func(c *config) {
		if owner == nil {
			c.problems = append(c.problems, "WithOwner: the function is nil")
			return
		}
		c.owner = owner
	}
}

// ownerKey is the context key of the request's owner.
type ownerKey struct{}

// OwnerFrom returns the owner of the request a run serves (WithOwner),
// from the context of the run (of its nodes, tools and prompt functions),
// or "" when the handler has no owners or outside a handler's run.
func OwnerFrom(ctx context.Context) string {
	o, _ := ctx.Value(ownerKey{}).(string)
	return o
}

// ThreadKey returns the checkpointer thread that holds the AG-UI thread
// threadID of owner: ThreadPrefix + threadID without an owner, and
// OwnedThreadPrefix + the owner (escaped, so that it holds no "/") + "/" +
// threadID with one. Two owners never share a key.
func ThreadKey(owner, threadID string) string {
	if owner == "" {
		return ThreadPrefix + threadID
	}
	return OwnedThreadPrefix + url.PathEscape(owner) + "/" + threadID
}

// authorize asks the handler's owner function who sends r, and returns r
// with the owner in its context; false when the request was refused (and
// answered).
func (h *Handler) authorize(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	if h.cfg.owner == nil {
		return r, true
	}
	owner, err := h.cfg.owner(r)
	if err != nil || owner == "" {
		// Why is the application's business (an expired token, an
		// unknown key, a failing identity service): none of it is told.
		http.Error(w, "agui: the request is not authorized", http.StatusUnauthorized)
		return nil, false
	}
	return r.WithContext(context.WithValue(r.Context(), ownerKey{}, owner)), true
}
