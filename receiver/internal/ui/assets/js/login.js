// The sign-in page: says why the form came back, and keeps the route to return to.
const params = new URLSearchParams(location.search);
const reasons = {
  invalid: 'That is not the read token. Check SCRIBEHOOK_READ_TOKEN (or the variable read_token_env names) of this serve.',
  disabled: 'The read API is disabled on this serve: set its read token and restart it.',
  origin: 'The sign-in form was posted from another site and was refused.',
  cookie: 'The token was right, but the browser did not keep the cookie. Secure cookies need HTTPS or a loopback address (127.0.0.1, localhost): put serve behind TLS, or open it through a loopback address.',
  expired: 'Your session ended (it lasts 12 hours, and ends when the token changes or someone signs out everywhere). Sign in again.',
};
const message = document.getElementById('login-message');
const reason = params.get('error') || (params.get('signed_out') ? 'signed_out' : '');
if (reason === 'signed_out') {
  message.textContent = 'Signed out.';
  message.setAttribute('role', 'status');
  message.hidden = false;
} else if (reason) {
  message.textContent = reasons[reason] || 'Sign-in failed.';
  message.classList.add('error');
  message.hidden = false;
}
const next = params.get('next') || '';
if (next.startsWith('#/')) document.getElementById('next').value = next;
document.getElementById('token').focus();
