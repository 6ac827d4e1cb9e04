package nodeagent

import (
	"fmt"

	"github.com/go-logr/logr"
	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
)

// vkLogger adapts logr to virtual-kubelet's logger: VK's info messages go to V(2),
// its debug messages to V(4), warnings to info and errors to error.
type vkLogger struct{ l logr.Logger }

var _ vklog.Logger = vkLogger{}

func newVKLogger(l logr.Logger) vklog.Logger { return vkLogger{l: l} }

func (v vkLogger) Debug(args ...any)            { v.l.V(4).Info(fmt.Sprint(args...)) }
func (v vkLogger) Debugf(f string, args ...any) { v.l.V(4).Info(fmt.Sprintf(f, args...)) }
func (v vkLogger) Info(args ...any)             { v.l.V(2).Info(fmt.Sprint(args...)) }
func (v vkLogger) Infof(f string, args ...any)  { v.l.V(2).Info(fmt.Sprintf(f, args...)) }
func (v vkLogger) Warn(args ...any)             { v.l.Info(fmt.Sprint(args...)) }
func (v vkLogger) Warnf(f string, args ...any)  { v.l.Info(fmt.Sprintf(f, args...)) }
func (v vkLogger) Error(args ...any)            { v.l.Error(nil, fmt.Sprint(args...)) }
func (v vkLogger) Errorf(f string, args ...any) { v.l.Error(nil, fmt.Sprintf(f, args...)) }
func (v vkLogger) Fatal(args ...any)            { v.l.Error(nil, fmt.Sprint(args...)) }
func (v vkLogger) Fatalf(f string, args ...any) { v.l.Error(nil, fmt.Sprintf(f, args...)) }

func (v vkLogger) WithField(k string, val any) vklog.Logger {
	return vkLogger{l: v.l.WithValues(k, val)}
}

func (v vkLogger) WithFields(f vklog.Fields) vklog.Logger {
	kv := make([]any, 0, 2*len(f))
	for k, val := range f {
		kv = append(kv, k, val)
	}
	return vkLogger{l: v.l.WithValues(kv...)}
}

func (v vkLogger) WithError(err error) vklog.Logger {
	return vkLogger{l: v.l.WithValues("err", err)}
}
