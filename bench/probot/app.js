// The minimal Probot app of the field notes' anchor: route issues.labeled, do nothing else.
// Run by bench/webhook_accept.py --probot as `probot run ./app.js`; Probot answers after this handler resolves.
export default (app) => {
  app.on("issues.labeled", async () => {});
};
