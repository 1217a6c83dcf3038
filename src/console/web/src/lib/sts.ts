// Sign-in: trade an access key for a short-lived session with STS GetSessionToken, so the console
// keeps only session credentials. A key that is already a session (it has a token) is used as is.
import { callQuery, xmlText, ApiError } from "./api";
import type { Session } from "./session";

export async function signIn(accessKeyId: string, secretAccessKey: string, sessionToken: string,
                             region: string): Promise<Session> {
  if (sessionToken) return { accessKeyId, secretAccessKey, sessionToken, region };
  const doc = await callQuery("sts", { Action: "GetSessionToken", Version: "2011-06-15", DurationSeconds: "3600" },
    { creds: { accessKeyId, secretAccessKey }, region });
  const creds = doc.getElementsByTagName("Credentials")[0];
  if (!creds) throw new ApiError("InvalidResponse", "GetSessionToken answered without credentials.", 200);
  return {
    accessKeyId: xmlText(creds, "AccessKeyId"),
    secretAccessKey: xmlText(creds, "SecretAccessKey"),
    sessionToken: xmlText(creds, "SessionToken"),
    expiration: xmlText(creds, "Expiration"),
    region,
  };
}
