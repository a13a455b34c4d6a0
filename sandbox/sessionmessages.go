package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/scribehook/scribehook/api"
)

// emitLocked builds a message of type t with data, records it, sends it on the socket when
// messages_config wants its category and to the callback when callback_config does.
func (sess *session) emitLocked(t api.MessageType, data any, acknowledged *bool) {
	m := api.LiveMessage{SessionID: sess.id, CreatedAt: api.Now(), Type: t, Acknowledged: acknowledged}
	if acknowledged != nil || isAddonMessage(t) {
		m.Error = json.RawMessage("null")
	}
	if data != nil {
		if err := m.SetData(data); err != nil {
			sess.log.WithError(err).Error("encode live message")
			return
		}
	}
	sess.sendLocked(m)
}

func (sess *session) emitWithErrorLocked(t api.MessageType, data any, errBody json.RawMessage) {
	m := api.LiveMessage{SessionID: sess.id, CreatedAt: api.Now(), Type: t, Error: errBody}
	if err := m.SetData(data); err != nil {
		return
	}
	sess.sendLocked(m)
}

// emitAddonLocked sends a post-processing add-on's message, with the add-on's error when it
// failed.
func (sess *session) emitAddonLocked(t api.MessageType, failure *api.AddonError, data any) {
	errBody := json.RawMessage("null")
	if failure != nil {
		errBody, _ = json.Marshal(api.MessageErrorBody{Message: failure.Message})
	}
	sess.emitWithErrorLocked(t, data, errBody)
}

func (sess *session) nackLocked(t api.MessageType, msg string) {
	b, _ := json.Marshal(api.MessageErrorBody{Message: msg})
	m := api.LiveMessage{SessionID: sess.id, CreatedAt: api.Now(), Type: t, Acknowledged: api.Bool(false), Error: b}
	sess.sendLocked(m)
}

func (sess *session) emitErrorLocked(msg string) {
	b, _ := json.Marshal(api.MessageErrorBody{Message: msg})
	sess.sendLocked(api.LiveMessage{SessionID: sess.id, CreatedAt: api.Now(), Type: api.MessageError, Error: b})
}

func isAddonMessage(t api.MessageType) bool {
	switch t {
	case api.MessageTranslation, api.MessageNamedEntityRecognition, api.MessageSentimentAnalysis,
		api.MessagePostChapterization, api.MessagePostSummarization:
		return true
	}
	return false
}

func (sess *session) sendLocked(m api.LiveMessage) {
	b, err := sess.recordLocked(m)
	if err != nil {
		return
	}
	sess.deliverLocked(m, b)
}

// recordLocked keeps the message for result.messages.
func (sess *session) recordLocked(m api.LiveMessage) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		sess.log.WithError(err).Error("encode live message")
		return nil, err
	}
	sess.messages = append(sess.messages, string(b))
	return b, nil
}

// deliverLocked sends a recorded message on the socket and to the callback, as their
// categories ask.
func (sess *session) deliverLocked(m api.LiveMessage, b []byte) {
	cats := api.MessageCategories(&m)
	// start_session never goes on the socket: the official SDKs make their own from the answer
	// to POST /v2/live when lifecycle events are asked for (docs/spec/sdk-notes.md), so the
	// service cannot be sending one there; callbacks and result.messages still have it.
	onSocket := m.Type != api.MessageStartSession
	if onSocket && sess.conn != nil && sess.wsCats.Has(cats...) {
		ctx, cancel := context.WithTimeout(sess.srv.ctx, 10*time.Second)
		err := sess.conn.Write(ctx, websocket.MessageText, b)
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			sess.log.WithError(err).Debug("write to live socket")
		}
	}
	if sess.callbackURL != "" && sess.cbCats.Has(cats...) {
		body, err := json.Marshal(api.LiveCallback{ID: sess.id, Event: api.LiveEvent(m.Type), Payload: m})
		if err != nil {
			return
		}
		sess.srv.cb.enqueue(sess.id, outbound{url: sess.callbackURL, method: http.MethodPost, body: body, key: sess.id, event: api.LiveEvent(m.Type)})
	}
}
